output "agent_configs" {
  description = "Map of node name to the agent's JSON config file (<config_dir>/ledgerd.json)."
  value       = local.agent_config_json
  sensitive   = true
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
