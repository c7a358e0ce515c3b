package main

import (
	"log/slog"
	"net/http"

	"github.com/hashicorp/raft"

	"github.com/ledgerd/ledgerd/cluster"
)

// apiDeps is what the public API needs from the agent.
type apiDeps struct {
	Node   *cluster.Node
	FSM    raft.FSM
	Logger *slog.Logger
}

// mountAPI registers the public API handlers on mux. The agent has already
// mounted /internal/, /metrics, /healthz and /readyz.
func mountAPI(mux *http.ServeMux, deps apiDeps) {
	_ = mux
	_ = deps
}
