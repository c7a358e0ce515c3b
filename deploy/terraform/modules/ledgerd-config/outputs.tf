output "agent_configs" {
  description = "Map of node name to the agent's JSON config file (<config_dir>/ledgerd.json)."
  value       = local.agent_config_json
  sensitive   = true

  # Secure by default: every listener authenticates its peers unless the
  # caller says insecure = true (a test bed). The agent refuses such a
  # config at start too; failing here fails the plan instead of the boot.
  precondition {
    condition     = var.insecure || var.tls_enabled
    error_message = "tls_enabled = false leaves Raft and the internal endpoints open to anyone who reaches them; set insecure = true as well if this is a test bed."
  }
  precondition {
    condition     = var.insecure || var.tls_verify_incoming
    error_message = "tls_verify_incoming = false lets any client that reaches the Raft port write to the log; set insecure = true as well if this is a test bed."
  }
  precondition {
    condition     = var.insecure || var.tls_http
    error_message = "tls_http = false sends tokens and forwarded writes in cleartext and leaves /internal/ unauthenticated; set insecure = true as well if this is a test bed."
  }
  precondition {
    condition     = var.insecure || var.tokens_file != null
    error_message = "tokens_file = null turns API authentication off (every caller is an operator); set insecure = true as well if this is a test bed."
  }
  precondition {
    condition     = var.tls_enabled || !var.tls_http
    error_message = "tls_http needs the TLS files: set tls_enabled = true (or tls_http = false with insecure = true)."
  }
}

output "systemd_unit" {
  description = "The ledgerd.service unit, the same on every node."
  value       = local.systemd_unit
}

output "cloud_init" {
  description = "Map of node name to its #cloud-config user data: user, data volume, config, secrets, unit, start."
  value       = local.cloud_init
  sensitive   = true
}

output "retry_join" {
  description = "Gossip addresses of every node (host:port)."
  value       = [for n in var.nodes : local.gossip_addrs[n.name]]
}

output "http_endpoints" {
  description = "The API address of every node, for clients' node lists (ledgerd -addr a,b,c)."
  value       = [for n in var.nodes : "${n.address}:${var.http_port}"]
}

output "files" {
  description = "Every rendered file keyed by <node>/<file name>, for tests and for tools that lay files out themselves."
  value = merge(
    { for name, c in local.agent_config_json : "${name}/ledgerd.json" => c },
    { for name, c in local.cloud_init : "${name}/cloud-init.yaml" => c },
    { for n in var.nodes : "${n.name}/ledgerd.service" => local.systemd_unit },
  )
  sensitive = true
}
