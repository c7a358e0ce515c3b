# Three ledgerd head nodes in three availability zones behind an internal
# load balancer, with generated TLS and gossip key (evaluation defaults).
# See ../../README.md for the inputs, outputs and the operating procedures.

terraform {
  required_version = ">= 1.6.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.30"
    }
    tls = {
      source  = "hashicorp/tls"
      version = "~> 4.0"
    }
    random = {
      source  = "hashicorp/random"
      version = "~> 3.5"
    }
  }

  # Keep the state encrypted and shared, e.g.:
  # backend "s3" { bucket = "...", key = "ledgerd/terraform.tfstate", region = "...", encrypt = true }
}

provider "aws" {
  region = var.region
}

module "ledgerd" {
  source = "../../modules/ledgerd-aws"

  name                 = var.name
  node_count           = 3
  vpc_id               = var.vpc_id
  subnet_ids           = var.subnet_ids
  ami_id               = var.ami_id
  instance_type        = var.instance_type
  client_cidr_blocks   = var.client_cidr_blocks
  create_load_balancer = true
  route53_zone_id      = var.route53_zone_id
  dns_name             = var.dns_name
  tokens_secret_id     = var.tokens_secret_id
  tags                 = { Environment = "evaluation" }
}
