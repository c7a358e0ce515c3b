package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/hashicorp/raft"

	"github.com/ledgerd/ledgerd/cluster"
	"github.com/ledgerd/ledgerd/fsm"
	"github.com/ledgerd/ledgerd/rpc"
)

// apiDeps is what the public API needs from the agent.
type apiDeps struct {
	Node   *cluster.Node
	FSM    raft.FSM
	Logger *slog.Logger

	// The fields below come from the agent's flags; zero values take the
	// defaults documented in rpc.Options.

	// Dev marks `agent -dev`: authentication may stay off without a warning.
	Dev bool
	// TokensFile is the bearer-token file (see rpc.AuthFile). Empty turns
	// authentication off: every caller is operator of tenant "default".
	TokensFile string
	// CORSOrigins lists browser origins allowed to call the API.
	CORSOrigins []string
	// RateLimit (calls/s per tenant) and RateBurst; 0 disables.
	RateLimit float64
	RateBurst int
	// MaxRequestBytes caps one request message.
	MaxRequestBytes int
}

// apiServer builds the public API server from deps.
func apiServer(deps apiDeps) (*rpc.Server, error) {
	if deps.Node == nil {
		return nil, errors.New("api: no cluster node")
	}
	f, ok := deps.FSM.(*fsm.FSM)
	if !ok {
		return nil, fmt.Errorf("api: the agent's FSM is %T, want *fsm.FSM", deps.FSM)
	}
	logger := deps.Logger
	if logger == nil {
		logger = slog.Default()
	}
	opts := rpc.Options{
		Ledger:          &rpc.FSMLedger{R: deps.Node, FSM: f},
		Cluster:         rpc.NodeCluster{Node: deps.Node},
		CORSOrigins:     deps.CORSOrigins,
		RateLimit:       deps.RateLimit,
		RateBurst:       deps.RateBurst,
		MaxRequestBytes: deps.MaxRequestBytes,
		Logger:          logger,
		Ready:           deps.Node.Ready,
		LeaderHint: func() string {
			_, addr := deps.Node.Leader()
			return addr
		},
	}
	if deps.TokensFile != "" {
		auth, err := rpc.LoadAuthFile(deps.TokensFile)
		if err != nil {
			return nil, fmt.Errorf("api: %w", err)
		}
		opts.Auth = auth
	} else if !deps.Dev {
		logger.Warn("API authentication is off: every caller is an operator; pass a tokens file to turn it on")
	}
	return rpc.New(opts)
}

// mountAPI registers the public API handlers on mux. The agent has already
// mounted /internal/, /metrics, /healthz and /readyz. If the API cannot be
// built (e.g. an unreadable tokens file) it fails closed: the API paths
// answer 503 and the error is logged.
func mountAPI(mux *http.ServeMux, deps apiDeps) {
	srv, err := apiServer(deps)
	if err != nil {
		logger := deps.Logger
		if logger == nil {
			logger = slog.Default()
		}
		logger.Error("public API disabled", "err", err)
		refuse := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "ledgerd API unavailable: "+err.Error(), http.StatusServiceUnavailable)
		})
		for _, name := range rpc.ServiceNames {
			mux.Handle("/"+name+"/", refuse)
		}
		return
	}
	srv.Mount(mux)
}
