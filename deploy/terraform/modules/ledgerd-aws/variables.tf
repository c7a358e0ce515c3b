variable "name" {
  description = "Cluster name: prefixes every resource name and secret, and is the value of the auto-join tag."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}$", var.name))
    error_message = "name: lower-case letters, digits and dashes, 2 to 31 characters, starting with a letter."
  }
}

variable "node_count" {
  description = "Head nodes: 3 tolerates one failure, 5 tolerates two."
  type        = number
  default     = 3

  validation {
    condition     = contains([3, 5], var.node_count)
    error_message = "node_count: must be 3 or 5."
  }
}

variable "vpc_id" {
  description = "VPC of the nodes."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets, one per availability zone; node i goes to subnet i mod len(subnet_ids). Give at least 3 so one zone outage leaves a quorum."
  type        = list(string)

  validation {
    condition     = length(var.subnet_ids) >= 1 && length(var.subnet_ids) == length(distinct(var.subnet_ids))
    error_message = "subnet_ids: at least one, no duplicates."
  }
}

variable "host_number" {
  description = "Host number (as in cidrhost) of the first node's fixed private IP in each subnet; the next node in the same subnet gets host_number+1. The IPs live on network interfaces that survive instance replacement, so the Raft and gossip addresses never change."
  type        = number
  default     = 10
}

variable "ami_id" {
  description = "Image with the ledgerd package (or set binary_url), cloud-init and the aws CLI. Changes are ignored after creation: upgrade node by node (see the README)."
  type        = string
}

variable "instance_type" {
  description = "EC2 instance type; a Nitro type so the data volume appears under /dev/disk/by-id."
  type        = string
  default     = "m6i.large"
}

variable "key_name" {
  description = "EC2 key pair for SSH, or null for none (use SSM Session Manager)."
  type        = string
  default     = null
}

variable "root_volume_size_gb" {
  description = "Size of the root volume."
  type        = number
  default     = 20
}

variable "data_volume_size_gb" {
  description = "Size of each node's data volume (Raft log and snapshots)."
  type        = number
  default     = 50
}

variable "data_volume_type" {
  description = "EBS type of the data volumes; gp3 or io2 (Raft fsyncs on every append)."
  type        = string
  default     = "gp3"
}

variable "data_volume_iops" {
  description = "Provisioned IOPS for gp3/io2 data volumes, or null for the type's default."
  type        = number
  default     = null
}

variable "kms_key_id" {
  description = "KMS key ARN for the EBS volumes and the secrets, or null for the AWS-managed keys."
  type        = string
  default     = null
}

variable "http_port" {
  description = "Port of the ledgerd API (and /metrics)."
  type        = number
  default     = 7420
}

variable "raft_port" {
  description = "Port of the Raft transport (nodes only)."
  type        = number
  default     = 7421
}

variable "gossip_port" {
  description = "Port of gossip, TCP and UDP (nodes only)."
  type        = number
  default     = 7422
}

variable "client_cidr_blocks" {
  description = "IPv4 CIDRs allowed to the API port (brokers, operators, Prometheus)."
  type        = list(string)
  default     = []
}

variable "client_security_group_ids" {
  description = "Security groups allowed to the API port."
  type        = list(string)
  default     = []
}

variable "create_load_balancer" {
  description = "Put an internal network load balancer in front of the API; it only sends traffic to nodes whose /readyz answers 200."
  type        = bool
  default     = true
}

variable "lb_certificate_arn" {
  description = "ACM certificate for a TLS listener on the load balancer (clients speak TLS to it, the load balancer speaks TLS to the nodes; client certificates do not cross it, so clients use tokens); null passes the nodes' own TLS through a TCP listener (clients verify the cluster CA)."
  type        = string
  default     = null
}

variable "route53_zone_id" {
  description = "Private hosted zone for a client DNS name, or null for none."
  type        = string
  default     = null
}

variable "dns_name" {
  description = "Record name in route53_zone_id (e.g. ledgerd.internal.example.com): an alias of the load balancer, or one A record per node without it."
  type        = string
  default     = null
}

variable "tls_secret_ids" {
  description = "Existing Secrets Manager secrets with the Raft TLS material (ca: PEM CA bundle; per node name <name>-<index>: cert and key PEM). Null generates a CA and node certificates with the tls provider: fine for evaluation, but the keys then sit in the Terraform state."
  type = object({
    ca    = string
    nodes = map(object({ cert = string, key = string }))
  })
  default = null
}

variable "tls_ca_cert_pem" {
  description = "With generated node certificates: sign them with this CA certificate (and tls_ca_key_pem) instead of a generated CA."
  type        = string
  default     = null
}

variable "tls_ca_key_pem" {
  description = "Private key of tls_ca_cert_pem."
  type        = string
  default     = null
  sensitive   = true
}

variable "tls_validity_hours" {
  description = "Validity of generated node certificates."
  type        = number
  default     = 8760
}

variable "gossip_key_secret_id" {
  description = "Existing secret whose SecretString is the line LEDGERD_GOSSIP_KEY=<base64 of 32 bytes>; null generates a key and stores it in a new secret."
  type        = string
  default     = null
}

variable "tokens_secret_id" {
  description = "Existing secret holding the API bearer-token file (JSON); it is copied to /etc/ledgerd/tokens on every node and named by tokens_file. Required: null turns API authentication off, which only insecure = true allows."
  type        = string
  default     = null
}

variable "insecure" {
  description = "Run the agents insecure (no API authentication when tokens_secret_id is null). Only for a test bed; the agents log it at ERROR on every start."
  type        = bool
  default     = false
}

variable "cors_origins" {
  description = "Browser origins allowed to call the API."
  type        = list(string)
  default     = []
}

variable "rate_limit" {
  description = "API calls per second per tenant, or null for no limit."
  type        = number
  default     = null
}

variable "binary_url" {
  description = "Download ledgerd from this URL at first boot instead of using the image's package."
  type        = string
  default     = ""
}

variable "binary_sha256" {
  description = "SHA-256 of the binary at binary_url."
  type        = string
  default     = ""
}

variable "dead_server_grace" {
  description = "How long a failed server stays in Raft before the leader removes it."
  type        = string
  default     = "2m"
}

variable "raft_timing" {
  description = "Raft timing and the forward deadline, passed to every node (see the ledgerd-config module): heartbeat_timeout, election_timeout, leader_lease_timeout, forward_timeout; unset fields keep the agent's defaults."
  type = object({
    heartbeat_timeout    = optional(string)
    election_timeout     = optional(string)
    leader_lease_timeout = optional(string)
    forward_timeout      = optional(string)
  })
  default = {}
}

variable "enable_ssm" {
  description = "Attach AmazonSSMManagedInstanceCore so operators reach the nodes with Session Manager instead of SSH."
  type        = bool
  default     = true
}

variable "auto_join_tag_key" {
  description = "Tag key set on every node, with the cluster name as value (for discovery by tag)."
  type        = string
  default     = "ledgerd-cluster"
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
