# Offline tests of the rendering: `terraform test` in this directory.

variables {
  nodes = [
    { name = "a", address = "10.0.0.1" },
    { name = "b", address = "10.0.0.2" },
    { name = "c", address = "10.0.0.3" },
  ]
}

run "three_nodes_join_each_other" {
  command = plan

  assert {
    condition     = jsondecode(output.agent_configs["a"]).retry_join == ["10.0.0.2:7422", "10.0.0.3:7422"]
    error_message = "node a must join the other two nodes' gossip ports, not itself."
  }
  assert {
    condition     = alltrue([for n, c in output.agent_configs : jsondecode(c).bootstrap_expect == 3])
    error_message = "bootstrap_expect must equal the node count on every node."
  }
  assert {
    condition     = jsondecode(output.agent_configs["b"]).http_addr == "0.0.0.0:7420" && jsondecode(output.agent_configs["b"]).http_advertise == "10.0.0.2:7420"
    error_message = "the API binds every interface and advertises the node's address."
  }
  assert {
    condition     = jsondecode(output.agent_configs["c"]).tls_verify_incoming == true && jsondecode(output.agent_configs["c"]).tls_ca_file == "/etc/ledgerd/tls/ca.pem"
    error_message = "mutual TLS is on by default with files under /etc/ledgerd/tls."
  }
  assert {
    condition     = jsondecode(output.agent_configs["c"]).tls_http == true && jsondecode(output.agent_configs["c"]).tokens_file == "/etc/ledgerd/tokens.json"
    error_message = "the API is served over TLS and authenticated with /etc/ledgerd/tokens.json by default."
  }
  assert {
    condition     = !can(jsondecode(output.agent_configs["a"]).insecure) && !can(jsondecode(output.agent_configs["a"]).tls_http_require_client_cert)
    error_message = "a default rendering is neither insecure nor requires client certificates of API callers."
  }
  assert {
    condition     = !can(jsondecode(output.agent_configs["a"]).gossip_key)
    error_message = "without gossip_key the config file must not carry one (it comes from ledgerd.env)."
  }
  assert {
    condition     = strcontains(output.systemd_unit, "ExecStartPre=/usr/bin/ledgerd agent -config /etc/ledgerd/ledgerd.json -config-check")
    error_message = "the unit must check the config before starting."
  }
  assert {
    condition     = startswith(output.cloud_init["a"], "#cloud-config\n")
    error_message = "cloud-init user data must start with #cloud-config."
  }
  assert {
    condition     = output.http_endpoints == ["10.0.0.1:7420", "10.0.0.2:7420", "10.0.0.3:7420"]
    error_message = "http_endpoints lists every node's API in order."
  }
}

run "insecure_test_bed_and_inline_gossip_key" {
  command = plan

  variables {
    insecure    = true
    tls_enabled = false
    tls_http    = false
    tokens_file = null
    gossip_key  = "cmVoZWFyc2FsLW9ubHktZ29zc2lwLWtleS0zMmJ5dGU="
  }

  assert {
    condition     = !can(jsondecode(output.agent_configs["a"]).tls_cert_file) && !can(jsondecode(output.agent_configs["a"]).tls_verify_incoming) && !can(jsondecode(output.agent_configs["a"]).tls_http)
    error_message = "with TLS off no tls_* key is rendered."
  }
  assert {
    condition     = jsondecode(output.agent_configs["a"]).insecure == true && !can(jsondecode(output.agent_configs["a"]).tokens_file)
    error_message = "an insecure rendering says insecure: true and may leave the tokens file out."
  }
  assert {
    condition     = jsondecode(output.agent_configs["a"]).gossip_key == "cmVoZWFyc2FsLW9ubHktZ29zc2lwLWtleS0zMmJ5dGU="
    error_message = "an inline gossip key lands in the config file."
  }
}

run "custom_data_dir_is_writable" {
  command = plan

  variables {
    data_dir = "/srv/ledgerd"
  }

  assert {
    condition     = strcontains(output.systemd_unit, "ReadWritePaths=/srv/ledgerd") && !strcontains(output.systemd_unit, "StateDirectory=")
    error_message = "a data_dir outside /var/lib needs ReadWritePaths instead of StateDirectory."
  }
}

run "even_node_count_is_refused" {
  command = plan

  variables {
    nodes = [
      { name = "a", address = "10.0.0.1" },
      { name = "b", address = "10.0.0.2" },
    ]
  }

  expect_failures = [var.nodes]
}

run "bad_gossip_key_is_refused" {
  command = plan

  variables {
    gossip_key = "c2hvcnQ="
  }

  expect_failures = [var.gossip_key]
}

run "duplicate_addresses_are_refused" {
  command = plan

  variables {
    nodes = [
      { name = "a", address = "10.0.0.1" },
      { name = "b", address = "10.0.0.1" },
      { name = "c", address = "10.0.0.3" },
    ]
  }

  expect_failures = [var.nodes]
}

run "api_settings_only_when_set" {
  command = plan

  variables {
    tokens_file  = "/etc/ledgerd/tokens"
    cors_origins = ["https://portal.example.org"]
    rate_limit   = 50
  }

  assert {
    condition     = jsondecode(output.agent_configs["a"]).tokens_file == "/etc/ledgerd/tokens" && jsondecode(output.agent_configs["a"]).rate_limit == 50
    error_message = "tokens_file and rate_limit are rendered when set."
  }
  assert {
    condition     = !can(jsondecode(output.agent_configs["a"]).rate_burst) && !can(jsondecode(output.agent_configs["a"]).max_request_bytes)
    error_message = "unset API limits are left to the agent's defaults."
  }
}

run "tls_off_needs_insecure" {
  command = plan

  variables {
    tls_enabled = false
    tls_http    = false
  }

  expect_failures = [output.agent_configs]
}

run "verify_incoming_off_needs_insecure" {
  command = plan

  variables {
    tls_verify_incoming = false
  }

  expect_failures = [output.agent_configs]
}

run "cleartext_api_needs_insecure" {
  command = plan

  variables {
    tls_http = false
  }

  expect_failures = [output.agent_configs]
}

run "no_tokens_needs_insecure" {
  command = plan

  variables {
    tokens_file = null
  }

  expect_failures = [output.agent_configs]
}

run "client_certificates_required_when_asked" {
  command = plan

  variables {
    tls_http_require_client_cert = true
  }

  assert {
    condition     = jsondecode(output.agent_configs["b"]).tls_http_require_client_cert == true
    error_message = "tls_http_require_client_cert is rendered when set."
  }
}
