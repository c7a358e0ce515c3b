#!/usr/bin/env bash
# Helpers that secure the agents the scripts start, the way
# docs/operations.md ("Securing a cluster") tells an operator to: a CA,
# a server certificate per node, a client certificate, a gossip key and a
# tokens file, all made with the binary's own `ledgerd tls` and `ledgerd
# keygen` commands into a scratch directory. Source it.
#
#   secure_pki BIN DIR NODE[=IP] ...   make everything into DIR; sets
#                                      $pki_dir, $ca_file, $gossip_key,
#                                      $tokens_file, $token and exports the
#                                      LEDGERD_* variables the CLI reads
#                                      (https, CA, client certificate, token)
#   secure_args NODE                   sets the array $secure_args: the
#                                      `ledgerd agent` flags that secure NODE
#   api_url HOST:PORT                  prints https://HOST:PORT
#   api_curl ARGS...                   curl with the CA and client certificate

secure_pki() {
	local bin=$1 dir=$2 spec node ip
	shift 2
	mkdir -p "$dir"
	pki_dir=$dir
	"$bin" tls ca create -dir "$dir" >/dev/null
	ca_file="$dir/ledgerd-ca.pem"
	for spec in "$@"; do
		node=${spec%%=*}
		ip=127.0.0.1
		[[ "$spec" == *=* ]] && ip=${spec#*=}
		"$bin" tls cert create -server -node "$node" -ip "$ip" -dir "$dir" \
			-ca "$ca_file" -ca-key "$dir/ledgerd-ca-key.pem" >/dev/null
	done
	"$bin" tls cert create -client -name ops -dir "$dir" -ca "$ca_file" -ca-key "$dir/ledgerd-ca-key.pem" >/dev/null
	gossip_key=$("$bin" keygen)
	token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
	tokens_file="$dir/tokens.json"
	(
		umask 077
		printf '{"tokens": [{"token": "%s", "tenant": "ops", "operator": true}],\n "certs": [{"common_name": "ops", "tenant": "ops", "operator": true}]}\n' \
			"$token" >"$tokens_file"
	)
	export LEDGERD_CACERT="$ca_file" LEDGERD_TOKEN="$token" \
		LEDGERD_CLIENT_CERT="$dir/client-ops.pem" LEDGERD_CLIENT_KEY="$dir/client-ops-key.pem"
}

secure_args() {
	local node=$1
	secure_args=(
		-tls-cert-file "$pki_dir/server-$node.pem" -tls-key-file "$pki_dir/server-$node-key.pem"
		-tls-ca-file "$ca_file" -tls-verify-incoming=true -tls-http=true
		-gossip-key "$gossip_key" -tokens-file "$tokens_file"
	)
}

api_url() { echo "https://$1"; }

api_curl() {
	curl --cacert "$ca_file" --cert "$LEDGERD_CLIENT_CERT" --key "$LEDGERD_CLIENT_KEY" "$@"
}
