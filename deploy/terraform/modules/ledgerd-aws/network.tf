# Security groups: the API port is the only one clients reach; Raft and
# gossip are open between the nodes only. The nodes also call each other's
# API port (followers forward writes to the leader).

resource "aws_security_group" "nodes" {
  name_prefix = "${var.name}-nodes-"
  description = "ledgerd head nodes"
  vpc_id      = var.vpc_id
  tags        = merge(local.tags, { Name = "${var.name}-nodes" })

  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_vpc_security_group_ingress_rule" "api_from_cidr" {
  for_each = toset(var.client_cidr_blocks)

  security_group_id = aws_security_group.nodes.id
  description       = "ledgerd API from clients"
  ip_protocol       = "tcp"
  from_port         = var.http_port
  to_port           = var.http_port
  cidr_ipv4         = each.value
}

resource "aws_vpc_security_group_ingress_rule" "api_from_sg" {
  for_each = toset(var.client_security_group_ids)

  security_group_id            = aws_security_group.nodes.id
  description                  = "ledgerd API from client security group"
  ip_protocol                  = "tcp"
  from_port                    = var.http_port
  to_port                      = var.http_port
  referenced_security_group_id = each.value
}

resource "aws_vpc_security_group_ingress_rule" "api_from_lb" {
  count = var.create_load_balancer ? 1 : 0

  security_group_id            = aws_security_group.nodes.id
  description                  = "ledgerd API from the load balancer (traffic and health checks)"
  ip_protocol                  = "tcp"
  from_port                    = var.http_port
  to_port                      = var.http_port
  referenced_security_group_id = aws_security_group.lb[0].id
}

resource "aws_vpc_security_group_ingress_rule" "peer" {
  for_each = {
    api        = { protocol = "tcp", port = var.http_port }
    raft       = { protocol = "tcp", port = var.raft_port }
    gossip_tcp = { protocol = "tcp", port = var.gossip_port }
    gossip_udp = { protocol = "udp", port = var.gossip_port }
  }

  security_group_id            = aws_security_group.nodes.id
  description                  = "ledgerd ${each.key} between head nodes"
  ip_protocol                  = each.value.protocol
  from_port                    = each.value.port
  to_port                      = each.value.port
  referenced_security_group_id = aws_security_group.nodes.id
}

resource "aws_vpc_security_group_egress_rule" "nodes_all" {
  security_group_id = aws_security_group.nodes.id
  description       = "peers, Secrets Manager, package and binary downloads"
  ip_protocol       = "-1"
  cidr_ipv4         = "0.0.0.0/0"
}

resource "aws_security_group" "lb" {
  count = var.create_load_balancer ? 1 : 0

  name_prefix = "${var.name}-lb-"
  description = "ledgerd API load balancer"
  vpc_id      = var.vpc_id
  tags        = merge(local.tags, { Name = "${var.name}-lb" })

  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_vpc_security_group_ingress_rule" "lb_from_cidr" {
  for_each = var.create_load_balancer ? toset(var.client_cidr_blocks) : toset([])

  security_group_id = aws_security_group.lb[0].id
  description       = "ledgerd API from clients"
  ip_protocol       = "tcp"
  from_port         = var.http_port
  to_port           = var.http_port
  cidr_ipv4         = each.value
}

resource "aws_vpc_security_group_ingress_rule" "lb_from_sg" {
  for_each = var.create_load_balancer ? toset(var.client_security_group_ids) : toset([])

  security_group_id            = aws_security_group.lb[0].id
  description                  = "ledgerd API from client security group"
  ip_protocol                  = "tcp"
  from_port                    = var.http_port
  to_port                      = var.http_port
  referenced_security_group_id = each.value
}

resource "aws_vpc_security_group_egress_rule" "lb_to_nodes" {
  count = var.create_load_balancer ? 1 : 0

  security_group_id            = aws_security_group.lb[0].id
  description                  = "to the nodes' API port"
  ip_protocol                  = "tcp"
  from_port                    = var.http_port
  to_port                      = var.http_port
  referenced_security_group_id = aws_security_group.nodes.id
}

resource "aws_lb" "api" {
  count = var.create_load_balancer ? 1 : 0

  name                             = substr("${var.name}-api", 0, 32)
  internal                         = true
  load_balancer_type               = "network"
  subnets                          = var.subnet_ids
  security_groups                  = [aws_security_group.lb[0].id]
  enable_cross_zone_load_balancing = true
  tags                             = local.tags
}

resource "aws_lb_target_group" "api" {
  count = var.create_load_balancer ? 1 : 0

  # The agents serve the API over TLS (tls_http). Without a load balancer
  # certificate the listener passes TLS through (TCP); with one it
  # terminates TLS and opens a new TLS connection to the node.
  name_prefix          = "ldgrd-"
  port                 = var.http_port
  protocol             = var.lb_certificate_arn == null ? "TCP" : "TLS"
  vpc_id               = var.vpc_id
  target_type          = "instance"
  deregistration_delay = 30
  tags                 = local.tags

  # /readyz answers 200 once the node has a leader and has caught up, so
  # a restarting node gets traffic only when it can serve it.
  health_check {
    protocol            = "HTTPS"
    port                = "traffic-port"
    path                = "/readyz"
    matcher             = "200"
    interval            = 10
    healthy_threshold   = 2
    unhealthy_threshold = 2
  }

  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_lb_target_group_attachment" "api" {
  for_each = var.create_load_balancer ? local.nodes : {}

  target_group_arn = aws_lb_target_group.api[0].arn
  target_id        = aws_instance.node[each.key].id
  port             = var.http_port
}

resource "aws_lb_listener" "api" {
  count = var.create_load_balancer ? 1 : 0

  load_balancer_arn = aws_lb.api[0].arn
  port              = var.http_port
  protocol          = var.lb_certificate_arn == null ? "TCP" : "TLS"
  certificate_arn   = var.lb_certificate_arn
  ssl_policy        = var.lb_certificate_arn == null ? null : "ELBSecurityPolicy-TLS13-1-2-2021-06"
  alpn_policy       = var.lb_certificate_arn == null ? null : "HTTP2Preferred"

  default_action {
    type             = "forward"
    target_group_arn = aws_lb_target_group.api[0].arn
  }
}

resource "aws_route53_record" "api_alias" {
  count = var.route53_zone_id != null && var.create_load_balancer ? 1 : 0

  zone_id = var.route53_zone_id
  name    = var.dns_name
  type    = "A"

  alias {
    name                   = aws_lb.api[0].dns_name
    zone_id                = aws_lb.api[0].zone_id
    evaluate_target_health = true
  }
}

resource "aws_route53_record" "api_nodes" {
  count = var.route53_zone_id != null && !var.create_load_balancer ? 1 : 0

  zone_id = var.route53_zone_id
  name    = var.dns_name
  type    = "A"
  ttl     = 60
  records = [for name in local.node_names : local.nodes[name].private_ip]
}
