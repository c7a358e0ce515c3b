package agent

import (
	"net/http"
	"net/http/pprof"
)

// mountPprof serves the Go runtime profiles (CPU, heap, goroutines, ...)
// under /debug/pprof/ for `go tool pprof`. Off unless the pprof key is set:
// profiles reveal internals and a CPU profile costs CPU while it runs.
func mountPprof(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
