variable "nodes" {
  description = "The head nodes, in a stable order: name (also the agent's node_name) and the private IP or DNS name the other nodes reach it at."
  type = list(object({
    name    = string
    address = string
  }))

  validation {
    condition     = contains([1, 3, 5, 7], length(var.nodes))
    error_message = "nodes: need 1 (evaluation only), 3, 5 or 7 head nodes; an even count adds no failure tolerance."
  }
  validation {
    condition     = length(distinct([for n in var.nodes : n.name])) == length(var.nodes)
    error_message = "nodes: every name must be unique."
  }
  validation {
    condition     = length(distinct([for n in var.nodes : n.address])) == length(var.nodes)
    error_message = "nodes: every address must be unique."
  }
  validation {
    condition     = alltrue([for n in var.nodes : can(regex("^[A-Za-z0-9][A-Za-z0-9.-]*$", n.name))])
    error_message = "nodes: a name must be letters, digits, dots and dashes."
  }
}

variable "http_port" {
  description = "Port of the HTTP API (Connect, gRPC, gRPC-Web, /metrics, /healthz, /readyz). Clients and the other nodes (write forwarding) use it."
  type        = number
  default     = 7420
}

variable "raft_port" {
  description = "Port of the Raft transport; only the other nodes use it."
  type        = number
  default     = 7421
}

variable "gossip_port" {
  description = "Port of memberlist gossip, TCP and UDP; only the other nodes use it."
  type        = number
  default     = 7422
}

variable "http_bind_all" {
  description = "Bind the HTTP API on every interface (0.0.0.0) instead of the node's address only."
  type        = bool
  default     = true
}

variable "data_dir" {
  description = "The agent's data_dir (Raft log, snapshots, node-id). On cloud nodes the data volume is mounted here."
  type        = string
  default     = "/var/lib/ledgerd"
}

variable "config_dir" {
  description = "Directory of ledgerd.json, ledgerd.env and tls/."
  type        = string
  default     = "/etc/ledgerd"
}

variable "binary_path" {
  description = "Absolute path of the ledgerd binary on the node."
  type        = string
  default     = "/usr/bin/ledgerd"

  validation {
    condition     = startswith(var.binary_path, "/")
    error_message = "binary_path: must be absolute (systemd requires it)."
  }
}

variable "insecure" {
  description = "Render agents that do not authenticate all their peers and callers (insecure: true in the config; the agent logs it at ERROR on every start and exports ledgerd_insecure 1). Only for a test bed. It is the only way to turn off tls_enabled, tls_verify_incoming or tls_http, or to leave tokens_file out."
  type        = bool
  default     = false
}

variable "tls_enabled" {
  description = "Give the agent its TLS files: <config_dir>/tls/ca.pem, server.pem and server-key.pem (or tls_dir). server.pem must carry the server role (`ledgerd tls cert create -server -node NAME -ip ADDRESS`). Only insecure = true may turn it off."
  type        = bool
  default     = true
}

variable "tls_dir" {
  description = "Directory of ca.pem, server.pem and server-key.pem; empty means <config_dir>/tls."
  type        = string
  default     = ""
}

variable "tls_verify_incoming" {
  description = "Require Raft peers to present a server certificate signed by the CA (mutual TLS). Only insecure = true may turn it off."
  type        = bool
  default     = true
}

variable "tls_http" {
  description = "Serve the HTTP API, and the internal endpoints the servers call on each other, over TLS with the server certificate; /internal/ then admits only server certificates. Only insecure = true may turn it off."
  type        = bool
  default     = true
}

variable "tls_http_require_client_cert" {
  description = "Make every API client present a certificate of the CA (tls_ca_file); otherwise a bearer token from tokens_file is enough. Leave it off behind a load balancer that terminates TLS."
  type        = bool
  default     = false
}

variable "gossip_key" {
  description = "Base64 gossip encryption key (16, 24 or 32 bytes, `ledgerd keygen`) written into the config file. Leave null to pass it as LEDGERD_GOSSIP_KEY in <config_dir>/ledgerd.env instead (what the AWS module does, from the secret store); a secured agent refuses to start, and the unit's -config-check fails, when neither gives it one."
  type        = string
  default     = null
  sensitive   = true

  validation {
    condition     = var.gossip_key == null || contains([16, 24, 32], try(length(base64decode(var.gossip_key)), 0))
    error_message = "gossip_key: must be base64 of 16, 24 or 32 bytes."
  }
}

variable "log_level" {
  description = "debug, info, warn or error."
  type        = string
  default     = "info"

  validation {
    condition     = contains(["debug", "info", "warn", "error"], var.log_level)
    error_message = "log_level: want debug, info, warn or error."
  }
}

variable "log_format" {
  description = "text or json (json suits journald forwarding)."
  type        = string
  default     = "json"

  validation {
    condition     = contains(["text", "json"], var.log_format)
    error_message = "log_format: want text or json."
  }
}

variable "dead_server_grace" {
  description = "How long a failed server stays in the Raft configuration before the leader removes it (Go duration); null keeps the agent's default."
  type        = string
  default     = null
}

variable "raft_timing" {
  description = "Raft timing and the forward deadline (Go durations; docs/operations.md, \"A leader that stalls or dies\"): heartbeat_timeout, election_timeout, leader_lease_timeout (at most heartbeat_timeout), forward_timeout. An unset field keeps the agent's default (1s, 1s, 500ms, 10s)."
  type = object({
    heartbeat_timeout    = optional(string)
    election_timeout     = optional(string)
    leader_lease_timeout = optional(string)
    forward_timeout      = optional(string)
  })
  default = {}
}

variable "data_device" {
  description = "Block device (ideally a stable /dev/disk/by-id path) that cloud-init formats once and mounts at data_dir; empty uses the root disk. A map from node name to device, so each node can name its own volume."
  type        = map(string)
  default     = {}
}

variable "secret_files" {
  description = "Files cloud-init fetches from AWS Secrets Manager at boot (needs the aws CLI on the image and an instance role allowed to read them). secret_id is an ARN or name; node empty means every node."
  type = list(object({
    node      = string
    path      = string
    secret_id = string
    mode      = string
  }))
  default = []
}

variable "binary_url" {
  description = "If set, cloud-init downloads the ledgerd binary from this URL to binary_path (checked against binary_sha256). Leave empty when the image ships the package."
  type        = string
  default     = ""
}

variable "binary_sha256" {
  description = "Hex SHA-256 of the binary at binary_url; required with binary_url."
  type        = string
  default     = ""

  validation {
    condition     = var.binary_sha256 == "" || can(regex("^[0-9a-f]{64}$", var.binary_sha256))
    error_message = "binary_sha256: want 64 lower-case hex digits."
  }
}

variable "secrets_region" {
  description = "AWS region of the secrets in secret_files; empty lets the aws CLI find it (instance metadata or its config)."
  type        = string
  default     = ""
}

variable "tokens_file" {
  description = "Path of the API bearer-token file on the node (JSON, see the rpc package's AuthFile); empty means <config_dir>/tokens.json. Only insecure = true may set it to null, which leaves API authentication off (every caller is an operator)."
  type        = string
  default     = ""
}

variable "cors_origins" {
  description = "Browser origins allowed to call the API (gRPC-Web, Connect from a browser)."
  type        = list(string)
  default     = []
}

variable "rate_limit" {
  description = "API calls per second per tenant; null keeps the agent's default (off)."
  type        = number
  default     = null

  validation {
    condition     = var.rate_limit == null || try(var.rate_limit >= 0, false)
    error_message = "rate_limit: must be >= 0."
  }
}

variable "rate_burst" {
  description = "API rate-limit bucket size; null keeps the agent's default (rate_limit)."
  type        = number
  default     = null
}

variable "max_request_bytes" {
  description = "Largest API request message in bytes; null keeps the agent's default."
  type        = number
  default     = null
}
