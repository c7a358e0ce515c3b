output "node_names" {
  description = "Node names, in index order (also their agent node_name)."
  value       = local.node_names
}

output "private_ips" {
  description = "Map of node name to its fixed private IP."
  value       = { for name in local.node_names : name => local.nodes[name].private_ip }
}

output "instance_ids" {
  description = "Map of node name to EC2 instance ID."
  value       = { for name, i in aws_instance.node : name => i.id }
}

output "data_volume_ids" {
  description = "Map of node name to its data volume (keep these: they hold the Raft log)."
  value       = { for name, v in aws_ebs_volume.data : name => v.id }
}

output "http_endpoints" {
  description = "Every node's API address, for clients' node lists."
  value       = module.config.http_endpoints
}

output "retry_join" {
  description = "Every node's gossip address."
  value       = module.config.retry_join
}

output "lb_dns_name" {
  description = "DNS name of the internal load balancer, or null."
  value       = var.create_load_balancer ? aws_lb.api[0].dns_name : null
}

output "api_dns_name" {
  description = "The Route 53 client name, or null."
  value       = var.route53_zone_id != null ? var.dns_name : null
}

output "security_group_id" {
  description = "Security group of the nodes."
  value       = aws_security_group.nodes.id
}

output "ca_cert_pem" {
  description = "CA certificate of the Raft TLS (generated or passed in), or null when the material comes from existing secrets."
  value       = local.generate_tls ? local.ca_cert_pem : null
}

output "iam_role_arn" {
  description = "Instance role of the nodes."
  value       = aws_iam_role.node.arn
}
