locals {
  tls_dir     = var.tls_dir != "" ? var.tls_dir : "${var.config_dir}/tls"
  config_path = "${var.config_dir}/ledgerd.json"
  env_path    = "${var.config_dir}/ledgerd.env"
  tokens_file = var.tokens_file == "" ? "${var.config_dir}/tokens.json" : var.tokens_file

  # Every node joins the gossip addresses of the others; gossip spreads the
  # rest, so one live peer is enough to find the cluster.
  gossip_addrs = { for n in var.nodes : n.name => "${n.address}:${var.gossip_port}" }

  # One agent config per node, with exactly the keys `ledgerd agent -config`
  # accepts. Optional keys are merged in only when set, so the file never
  # carries a key the operator did not ask for. jsonencode sorts keys, which
  # keeps the rendering byte-stable.
  agent_configs = {
    for n in var.nodes : n.name => merge(
      {
        node_name        = n.name
        data_dir         = var.data_dir
        http_addr        = "${var.http_bind_all ? "0.0.0.0" : n.address}:${var.http_port}"
        http_advertise   = "${n.address}:${var.http_port}"
        raft_addr        = "${n.address}:${var.raft_port}"
        gossip_addr      = "${n.address}:${var.gossip_port}"
        retry_join       = [for m in var.nodes : local.gossip_addrs[m.name] if m.name != n.name]
        bootstrap_expect = length(var.nodes)
        log_level        = var.log_level
        log_format       = var.log_format
      },
      { for k, v in {
        tls_cert_file = "${local.tls_dir}/server.pem"
        tls_key_file  = "${local.tls_dir}/server-key.pem"
        tls_ca_file   = "${local.tls_dir}/ca.pem"
      } : k => v if var.tls_enabled },
      { for k, v in {
        tls_verify_incoming = var.tls_verify_incoming
        tls_http            = var.tls_http
      } : k => v if var.tls_enabled },
      { for k, v in { tls_http_require_client_cert = true } : k => v if var.tls_enabled && var.tls_http && var.tls_http_require_client_cert },
      { for k, v in { insecure = true } : k => v if var.insecure },
      { for k, v in { gossip_key = var.gossip_key } : k => v if v != null },
      { for k, v in { dead_server_grace = var.dead_server_grace } : k => v if v != null },
      { for k, v in {
        raft_heartbeat_timeout    = var.raft_timing.heartbeat_timeout
        raft_election_timeout     = var.raft_timing.election_timeout
        raft_leader_lease_timeout = var.raft_timing.leader_lease_timeout
        forward_timeout           = var.raft_timing.forward_timeout
      } : k => v if v != null },
      { for k, v in { tokens_file = local.tokens_file } : k => v if v != null },
      { for k, v in { cors_origins = var.cors_origins } : k => v if length(v) > 0 },
      { for k, v in {
        rate_limit        = var.rate_limit
        rate_burst        = var.rate_burst
        max_request_bytes = var.max_request_bytes
      } : k => v if v != null },
    )
  }

  agent_config_json = { for name, c in local.agent_configs : name => "${jsonencode(c)}\n" }

  systemd_unit = templatefile("${path.module}/templates/ledgerd.service.tftpl", {
    binary_path = var.binary_path
    config_path = local.config_path
    env_path    = local.env_path
    data_dir    = var.data_dir
  })

  secrets_unit = file("${path.module}/templates/ledgerd-secrets.service.tftpl")

  cloud_init = {
    for n in var.nodes : n.name => templatefile("${path.module}/templates/cloud-init.yaml.tftpl", {
      node_name     = n.name
      binary_path   = var.binary_path
      binary_url    = var.binary_url
      binary_sha256 = var.binary_sha256
      config_dir    = var.config_dir
      config_path   = local.config_path
      env_path      = local.env_path
      tls_dir       = local.tls_dir
      data_dir      = var.data_dir
      data_device   = lookup(var.data_device, n.name, "")
      agent_config  = local.agent_config_json[n.name]
      systemd_unit  = local.systemd_unit
      secrets_unit  = local.secrets_unit
      secret_files  = [for f in var.secret_files : f if f.node == "" || f.node == n.name]
      prepare_data_script = templatefile("${path.module}/templates/prepare-data.sh.tftpl", {
        data_device = lookup(var.data_device, n.name, "")
        data_dir    = var.data_dir
      })
      fetch_secrets_script = templatefile("${path.module}/templates/fetch-secrets.sh.tftpl", {
        region       = var.secrets_region
        secret_files = [for f in var.secret_files : f if f.node == "" || f.node == n.name]
      })
    })
  }
}
