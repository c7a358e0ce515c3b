output "http_endpoints" {
  description = "Node API addresses: export LEDGERD_ADDR=$(terraform output -raw ledgerd_addr)."
  value       = module.ledgerd.http_endpoints
}

output "ledgerd_addr" {
  description = "The node list as the CLI's LEDGERD_ADDR wants it."
  value       = join(",", module.ledgerd.http_endpoints)
}

output "lb_dns_name" {
  description = "Internal load balancer name for clients."
  value       = module.ledgerd.lb_dns_name
}

output "instance_ids" {
  description = "Node name to instance ID (for -replace and Session Manager)."
  value       = module.ledgerd.instance_ids
}

output "ca_cert_pem" {
  description = "CA of the cluster's Raft TLS."
  value       = module.ledgerd.ca_cert_pem
}
