package agent

import (
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ledgerd/ledgerd/ledger/replicated"
	"github.com/ledgerd/ledgerd/rpc"
	"github.com/ledgerd/ledgerd/ui"
)

// handler builds the agent's one HTTP mux: the cluster's internal
// endpoints, metrics, health, profiles (when asked for) and the public API.
func (a *Agent) handler() http.Handler {
	node := a.node // a.node is cleared by Shutdown while requests may still run
	mux := http.NewServeMux()
	internal := node.Handler()
	switch {
	case a.httpTLS != nil && a.cfg.SecureMigration != "":
		internal = requireServerOverTLS(internal)
	case a.httpTLS != nil:
		internal = requireServer(internal)
	}
	mux.Handle("/internal/", internal)
	mux.Handle("GET /metrics", a.requireMetricsToken(promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{})))
	if a.cfg.Pprof {
		mountPprof(mux)
	}
	mux.Handle(ui.Path, ui.Handler())
	mux.Handle("GET /{$}", ui.RedirectRoot())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if why := node.NotReadyReason(); why != "" {
			http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
			return
		}
		if a.cfg.Insecure {
			_, _ = io.WriteString(w, "ready (INSECURE: peers and callers are not authenticated)\n")
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	srv, err := a.apiServer()
	if err != nil {
		mountRefusal(mux, a, err)
		return mux
	}
	srv.Mount(mux)
	return mux
}

// requireMetricsToken guards /metrics with metrics_token when one is set.
func (a *Agent) requireMetricsToken(next http.Handler) http.Handler {
	if a.cfg.MetricsToken == "" {
		return next
	}
	want := []byte("Bearer " + a.cfg.MetricsToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ledgerd metrics"`)
			http.Error(w, "metrics need the metrics token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// apiOptions are the public API's options built from the configuration.
func (a *Agent) apiOptions() (rpc.Options, error) {
	node := a.node
	opts := rpc.Options{
		Ledger:          a.ledger,
		Cluster:         clusterOps{replicated.Cluster{Node: node}},
		CORSOrigins:     a.cfg.CORSOrigins,
		RateLimit:       a.cfg.RateLimit,
		RateBurst:       a.cfg.RateBurst,
		MaxRequestBytes: a.cfg.MaxRequestBytes,
		Logger:          a.log,
		Ready:           node.Ready,
		LeaderHint: func() string {
			_, addr := node.Leader()
			return addr
		},
	}
	if a.cfg.TokensFile != "" {
		auth, err := rpc.LoadAuthFile(a.cfg.TokensFile)
		if err != nil {
			return opts, fmt.Errorf("api: %w", err)
		}
		opts.Auth = auth
		a.auth = auth
	} else if !a.opts.Dev {
		a.log.Error("API authentication is off: every caller is an operator; pass a tokens file to turn it on")
	}
	if a.opts.API != nil {
		a.opts.API(&opts)
	}
	return opts, nil
}

// apiServer builds the public API server.
func (a *Agent) apiServer() (*rpc.Server, error) {
	opts, err := a.apiOptions()
	if err != nil {
		return nil, err
	}
	return rpc.New(opts)
}

// mountRefusal makes every API path answer 503 with err: an API that
// cannot be built (e.g. an unreadable tokens file) fails closed instead of
// serving without its configured authentication.
func mountRefusal(mux *http.ServeMux, a *Agent, err error) {
	a.log.Error("public API disabled", "err", err)
	refuse := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "ledgerd API unavailable: "+err.Error(), http.StatusServiceUnavailable)
	})
	for _, name := range rpc.ServiceNames {
		mux.Handle("/"+name+"/", refuse)
	}
}
