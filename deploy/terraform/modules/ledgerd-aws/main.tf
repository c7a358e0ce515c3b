data "aws_region" "current" {}

data "aws_subnet" "this" {
  for_each = toset(var.subnet_ids)
  id       = each.value
}

locals {
  tags = merge(var.tags, { "ledgerd-cluster-name" = var.name })

  # Node i lives in subnet i mod n at a fixed host number, so nodes spread
  # over the zones and every address is known before anything is created:
  # that is what lets each node's config list the others for retry_join
  # without a discovery service.
  nodes = {
    for i in range(var.node_count) : "${var.name}-${i}" => {
      index     = i
      subnet_id = var.subnet_ids[i % length(var.subnet_ids)]
      private_ip = cidrhost(
        data.aws_subnet.this[var.subnet_ids[i % length(var.subnet_ids)]].cidr_block,
        var.host_number + floor(i / length(var.subnet_ids)),
      )
      availability_zone = data.aws_subnet.this[var.subnet_ids[i % length(var.subnet_ids)]].availability_zone
    }
  }
  node_names = [for i in range(var.node_count) : "${var.name}-${i}"]

  config_dir = "/etc/ledgerd"
  tls_dir    = "/etc/ledgerd/tls"
}

module "config" {
  source = "../ledgerd-config"

  nodes             = [for name in local.node_names : { name = name, address = local.nodes[name].private_ip }]
  http_port         = var.http_port
  raft_port         = var.raft_port
  gossip_port       = var.gossip_port
  config_dir        = local.config_dir
  tls_dir           = local.tls_dir
  dead_server_grace = var.dead_server_grace
  raft_timing       = var.raft_timing
  binary_url        = var.binary_url
  binary_sha256     = var.binary_sha256
  secrets_region    = data.aws_region.current.name
  insecure          = var.insecure
  tokens_file       = var.tokens_secret_id == null ? null : "${local.config_dir}/tokens"
  cors_origins      = var.cors_origins
  rate_limit        = var.rate_limit
  # Nitro instances expose an EBS volume as an NVMe disk whose serial is
  # the volume ID without its dash.
  data_device = {
    for name in local.node_names :
    name => "/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_${replace(aws_ebs_volume.data[name].id, "-", "")}"
  }
  secret_files = concat(
    [
      { node = "", path = "${local.config_dir}/ledgerd.env", secret_id = local.gossip_secret_id, mode = "0640" },
      { node = "", path = "${local.tls_dir}/ca.pem", secret_id = local.tls_ca_secret_id, mode = "0644" },
    ],
    flatten([for name in local.node_names : [
      { node = name, path = "${local.tls_dir}/server.pem", secret_id = local.tls_node_secret_ids[name].cert, mode = "0644" },
      { node = name, path = "${local.tls_dir}/server-key.pem", secret_id = local.tls_node_secret_ids[name].key, mode = "0640" },
    ]]),
    var.tokens_secret_id == null ? [] : [
      { node = "", path = "${local.config_dir}/tokens", secret_id = var.tokens_secret_id, mode = "0640" },
    ],
  )
}

resource "aws_network_interface" "node" {
  for_each = local.nodes

  subnet_id       = each.value.subnet_id
  private_ips     = [each.value.private_ip]
  security_groups = [aws_security_group.nodes.id]
  description     = "ledgerd ${each.key}: fixed Raft, gossip and API address"
  tags            = merge(local.tags, { Name = each.key })
}

resource "aws_ebs_volume" "data" {
  for_each = local.nodes

  availability_zone = each.value.availability_zone
  size              = var.data_volume_size_gb
  type              = var.data_volume_type
  iops              = var.data_volume_iops
  encrypted         = true
  kms_key_id        = var.kms_key_id
  tags              = merge(local.tags, { Name = "${each.key}-data" })

  lifecycle {
    # The Raft log lives here: destroying it by accident loses a replica.
    prevent_destroy = true
  }
}

resource "aws_instance" "node" {
  for_each = local.nodes

  ami                  = var.ami_id
  instance_type        = var.instance_type
  key_name             = var.key_name
  iam_instance_profile = aws_iam_instance_profile.node.name
  user_data_base64     = base64encode(module.config.cloud_init[each.key])

  network_interface {
    network_interface_id = aws_network_interface.node[each.key].id
    device_index         = 0
  }

  metadata_options {
    http_endpoint               = "enabled"
    http_tokens                 = "required"
    http_put_response_hop_limit = 1
  }

  root_block_device {
    volume_size = var.root_volume_size_gb
    volume_type = "gp3"
    encrypted   = true
    kms_key_id  = var.kms_key_id
  }

  tags = merge(local.tags, {
    Name                    = each.key
    (var.auto_join_tag_key) = var.name
  })

  lifecycle {
    # A new image or new user data must not replace every node at once:
    # roll them one at a time with `terraform apply -replace` (README).
    ignore_changes = [ami, user_data_base64]
  }
}

resource "aws_volume_attachment" "data" {
  for_each = local.nodes

  device_name                    = "/dev/sdf"
  volume_id                      = aws_ebs_volume.data[each.key].id
  instance_id                    = aws_instance.node[each.key].id
  stop_instance_before_detaching = true
}
