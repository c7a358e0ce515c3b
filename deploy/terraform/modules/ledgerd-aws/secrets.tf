# TLS material and the gossip key. Production passes existing secrets
# (tls_secret_ids, gossip_key_secret_id) so private keys never enter the
# Terraform state; without them this file generates everything, which is
# meant for evaluation clusters with an encrypted state backend.

locals {
  generate_tls    = var.tls_secret_ids == null
  generate_ca     = local.generate_tls && var.tls_ca_cert_pem == null
  generate_gossip = var.gossip_key_secret_id == null

  ca_cert_pem = local.generate_ca ? tls_self_signed_cert.ca[0].cert_pem : var.tls_ca_cert_pem
  ca_key_pem  = local.generate_ca ? tls_private_key.ca[0].private_key_pem : var.tls_ca_key_pem

  tls_ca_secret_id = local.generate_tls ? aws_secretsmanager_secret.tls_ca[0].arn : var.tls_secret_ids.ca
  tls_node_secret_ids = local.generate_tls ? {
    for name in local.node_names : name => {
      cert = aws_secretsmanager_secret.tls_cert[name].arn
      key  = aws_secretsmanager_secret.tls_key[name].arn
    }
  } : var.tls_secret_ids.nodes
  gossip_secret_id = local.generate_gossip ? aws_secretsmanager_secret.gossip[0].arn : var.gossip_key_secret_id

  # Every secret a node may read, for the instance role.
  secret_ids = compact(concat(
    [local.tls_ca_secret_id, local.gossip_secret_id, var.tokens_secret_id == null ? "" : var.tokens_secret_id],
    flatten([for name in local.node_names : [local.tls_node_secret_ids[name].cert, local.tls_node_secret_ids[name].key]]),
  ))
}

check "tls_secret_ids_cover_every_node" {
  assert {
    condition     = var.tls_secret_ids == null || alltrue([for name in local.node_names : contains(keys(var.tls_secret_ids.nodes), name)])
    error_message = "tls_secret_ids.nodes must have an entry for every node (${join(", ", local.node_names)})."
  }
}

check "ca_key_with_ca_cert" {
  assert {
    condition     = (var.tls_ca_cert_pem == null) == (var.tls_ca_key_pem == null)
    error_message = "tls_ca_cert_pem and tls_ca_key_pem must be set together."
  }
}

resource "tls_private_key" "ca" {
  count       = local.generate_ca ? 1 : 0
  algorithm   = "ECDSA"
  ecdsa_curve = "P256"
}

resource "tls_self_signed_cert" "ca" {
  count = local.generate_ca ? 1 : 0

  private_key_pem       = tls_private_key.ca[0].private_key_pem
  is_ca_certificate     = true
  validity_period_hours = 87600
  allowed_uses          = ["cert_signing", "crl_signing", "digital_signature"]

  subject {
    common_name  = "${var.name} ledgerd CA"
    organization = "ledgerd"
  }
}

resource "tls_private_key" "node" {
  for_each    = local.generate_tls ? local.nodes : {}
  algorithm   = "ECDSA"
  ecdsa_curve = "P256"
}

resource "tls_cert_request" "node" {
  for_each = local.generate_tls ? local.nodes : {}

  private_key_pem = tls_private_key.node[each.key].private_key_pem
  # server.ledgerd (with server_auth below) is the server role the agents
  # require of each other on Raft and on the internal endpoints (the
  # agent/pki package); the private IP is what peers and clients dial.
  dns_names    = [each.key, "server.ledgerd", "localhost"]
  ip_addresses = [each.value.private_ip, "127.0.0.1"]

  subject {
    common_name  = "server.${var.name}.ledgerd"
    organization = "ledgerd"
  }
}

resource "tls_locally_signed_cert" "node" {
  for_each = local.generate_tls ? local.nodes : {}

  cert_request_pem      = tls_cert_request.node[each.key].cert_request_pem
  ca_private_key_pem    = local.ca_key_pem
  ca_cert_pem           = local.ca_cert_pem
  validity_period_hours = var.tls_validity_hours
  early_renewal_hours   = 720
  # Raft TLS is mutual: every node is a server and a client of the others.
  allowed_uses = ["digital_signature", "key_encipherment", "server_auth", "client_auth"]
}

resource "aws_secretsmanager_secret" "tls_ca" {
  count       = local.generate_tls ? 1 : 0
  name_prefix = "${var.name}/tls/ca-"
  kms_key_id  = var.kms_key_id
  tags        = local.tags
}

resource "aws_secretsmanager_secret_version" "tls_ca" {
  count         = local.generate_tls ? 1 : 0
  secret_id     = aws_secretsmanager_secret.tls_ca[0].id
  secret_string = local.ca_cert_pem
}

resource "aws_secretsmanager_secret" "tls_cert" {
  for_each    = local.generate_tls ? local.nodes : {}
  name_prefix = "${var.name}/tls/${each.key}/cert-"
  kms_key_id  = var.kms_key_id
  tags        = local.tags
}

resource "aws_secretsmanager_secret_version" "tls_cert" {
  for_each      = local.generate_tls ? local.nodes : {}
  secret_id     = aws_secretsmanager_secret.tls_cert[each.key].id
  secret_string = tls_locally_signed_cert.node[each.key].cert_pem
}

resource "aws_secretsmanager_secret" "tls_key" {
  for_each    = local.generate_tls ? local.nodes : {}
  name_prefix = "${var.name}/tls/${each.key}/key-"
  kms_key_id  = var.kms_key_id
  tags        = local.tags
}

resource "aws_secretsmanager_secret_version" "tls_key" {
  for_each      = local.generate_tls ? local.nodes : {}
  secret_id     = aws_secretsmanager_secret.tls_key[each.key].id
  secret_string = tls_private_key.node[each.key].private_key_pem
}

resource "random_bytes" "gossip" {
  count  = local.generate_gossip ? 1 : 0
  length = 32
}

resource "aws_secretsmanager_secret" "gossip" {
  count       = local.generate_gossip ? 1 : 0
  name_prefix = "${var.name}/gossip-env-"
  kms_key_id  = var.kms_key_id
  tags        = local.tags
}

resource "aws_secretsmanager_secret_version" "gossip" {
  count         = local.generate_gossip ? 1 : 0
  secret_id     = aws_secretsmanager_secret.gossip[0].id
  secret_string = "LEDGERD_GOSSIP_KEY=${random_bytes.gossip[0].base64}\n"
}
