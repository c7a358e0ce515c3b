variable "region" {
  description = "AWS region."
  type        = string
}

variable "name" {
  description = "Cluster name."
  type        = string
  default     = "ledgerd"
}

variable "vpc_id" {
  description = "VPC of the nodes."
  type        = string
}

variable "subnet_ids" {
  description = "Three private subnets in three availability zones."
  type        = list(string)
}

variable "ami_id" {
  description = "Image with the ledgerd package, cloud-init and the aws CLI."
  type        = string
}

variable "instance_type" {
  description = "EC2 instance type (Nitro)."
  type        = string
  default     = "m6i.large"
}

variable "client_cidr_blocks" {
  description = "CIDRs of brokers, operators and Prometheus."
  type        = list(string)
}

variable "route53_zone_id" {
  description = "Private hosted zone for the client name, or null."
  type        = string
  default     = null
}

variable "dns_name" {
  description = "Client DNS name in route53_zone_id."
  type        = string
  default     = null
}

variable "tokens_secret_id" {
  description = "Secret holding the API tokens file (JSON, see docs/operations.md, \"Securing a cluster\"). Required: the plan fails without it, as the agents would refuse to start."
  type        = string
  default     = null
}
