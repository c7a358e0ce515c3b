// Command loadgen drives ledgerd (over its public API) or a raw
// hashicorp/raft cluster (Apply of a no-op FSM, the ceiling of the
// consensus library) with the closed-loop booking workload of package
// service and prints a result table per client count.
//
//	go run -tags hashicorpmetrics ./benchmarks/service/cmd/loadgen -system ledgerd -addrs 127.0.0.1:7420 -clients 1,16,64 -live 10000 \
//	    -ca-file ledgerd-ca.pem -token "$LEDGERD_TOKEN"
//	go run -tags hashicorpmetrics ./benchmarks/service/cmd/loadgen -system ledgerd -coalesce=false -clients 64
//	go run -tags hashicorpmetrics ./benchmarks/service/cmd/loadgen -system rawraft -nodes 3 -clients 64
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"

	"github.com/ledgerd/ledgerd/benchmarks/service"
	"github.com/ledgerd/ledgerd/rpc/client"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run() error {
	var f service.Flags
	f.Register(flag.CommandLine)
	system := flag.String("system", "ledgerd", "ledgerd or rawraft")
	addrs := flag.String("addrs", "127.0.0.1:7420", "ledgerd API addresses, comma-separated")
	token := flag.String("token", "", "API bearer token (operator, to create resources)")
	caFile := flag.String("ca-file", "", "ledgerd: PEM CA that signs the agents' certificates: speak https (a secured agent, tls_http); rawraft: run the transport over mutual TLS with this CA")
	certFile := flag.String("cert-file", "", "ledgerd: client certificate for mutual TLS (with -ca-file); rawraft: the nodes' certificate (127.0.0.1, server and client auth)")
	keyFile := flag.String("key-file", "", "ledgerd: client key for mutual TLS; rawraft: the nodes' key")
	nodes := flag.Int("nodes", 0, "cluster size (rawraft: nodes to start; ledgerd: for the report)")
	dir := flag.String("dir", "", "rawraft data directory (default: a temporary one)")
	logStore := flag.String("log-store", "boltdb", "rawraft: where the nodes keep the Raft log, boltdb or wal (ledgerd's raft_log_store)")
	report := flag.String("report", "", "instead of a run: read this JSON-lines result file and write tables and plots to -out")
	out := flag.String("out", ".", "directory for -report")
	cpuprofile := flag.String("cpuprofile", "", "write the load generator's own CPU profile to this file")
	coalesce := flag.Bool("coalesce", true, "ledgerd: coalesce concurrent calls into Batch calls (false: one API call per operation)")
	httpVersion := flag.String("http", "auto", "ledgerd: the HTTP version the client speaks to the agents: auto (the client's default: Batch calls over 1.1, the rest over 2), 1.1 or 2")
	http1 := flag.Bool("http1", false, "ledgerd: the same as -http 1.1")
	inFlight := flag.Int("batch-inflight", 0, "ledgerd: Batch calls in flight per node (0: the client's default, 2; 1: one batch at a time, the default before the fair-share rule)")
	flag.Parse()
	hv, err := client.ParseHTTPVersion(*httpVersion)
	if err != nil {
		return fmt.Errorf("-http: %w", err)
	}
	if *http1 {
		hv = client.HTTP1
	}
	if *report != "" {
		return writeReport(*report, *out)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *cpuprofile != "" {
		fh, err := os.Create(*cpuprofile)
		if err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer fh.Close()
		if err := pprof.StartCPUProfile(fh); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}

	var sys service.System
	switch *system {
	case "ledgerd":
		tc, err := clientTLS(*caFile, *certFile, *keyFile)
		if err != nil {
			return err
		}
		l, err := service.NewLedgerd(strings.Split(*addrs, ","), client.Options{Token: *token, TLS: tc, NoCoalesce: !*coalesce, MaxInFlight: *inFlight, HTTP: hv}, f.Label)
		if err != nil {
			return err
		}
		if *nodes == 0 {
			*nodes = len(strings.Split(*addrs, ","))
		}
		sys = l
	case "rawraft":
		if *nodes <= 0 {
			*nodes = 3
		}
		// -cert-file/-key-file/-ca-file secure the nodes' transport, as
		// a secured ledgerd's Raft transport is.
		var tc *tls.Config
		if *caFile != "" {
			var err error
			if tc, err = clientTLS(*caFile, *certFile, *keyFile); err != nil {
				return err
			}
			if len(tc.Certificates) == 0 {
				return fmt.Errorf("-system rawraft with -ca-file needs -cert-file and -key-file (a certificate for 127.0.0.1 with server and client auth)")
			}
			tc.ClientCAs, tc.ClientAuth, tc.MinVersion = tc.RootCAs, tls.RequireAndVerifyClientCert, tls.VersionTLS13
		}
		r, err := service.NewRawRaft(*nodes, *dir, tc, *logStore)
		if err != nil {
			return err
		}
		sys = r
	default:
		return fmt.Errorf("-system %q: want ledgerd or rawraft", *system)
	}
	defer sys.Close()
	if f.Label == "" {
		f.Label = fmt.Sprintf("%d nodes", *nodes)
	}
	_, err = service.RunAll(ctx, sys, f, *nodes, os.Stdout)
	return err
}

// clientTLS is the TLS configuration of the agents' clients: nil (plain
// http to an insecure agent) without caFile.
func clientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" {
		if certFile != "" || keyFile != "" {
			return nil, fmt.Errorf("-cert-file/-key-file need -ca-file")
		}
		return nil, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("-ca-file: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("-ca-file: %s holds no PEM certificate", caFile)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
	if certFile != "" || keyFile != "" {
		kp, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("-cert-file/-key-file: %w", err)
		}
		tc.Certificates = []tls.Certificate{kp}
	}
	return tc, nil
}

// writeReport renders results.md (bars, throughput and CPU per operation
// per system and client count, TLS cost, every cell), throughput.svg and
// latency-cdf.svg (reserve latency at 64 clients, default mix) into out.
func writeReport(in, out string) error {
	rs, err := service.ReadResults(in)
	if err != nil {
		return err
	}
	var md strings.Builder
	md.WriteString("## Bars\n\n")
	if err := service.WriteBars(&md, rs); err != nil {
		return err
	}
	md.WriteString("## Throughput and CPU per operation\n\n")
	for _, mix := range []string{"default", "reserve"} {
		if err := service.WriteSummary(&md, rs, mix); err != nil {
			return err
		}
	}
	var tlsCost strings.Builder
	if err := service.WriteTLSCost(&tlsCost, rs); err != nil {
		return err
	}
	if tlsCost.Len() > 0 {
		md.WriteString("## TLS cost (each pair measured back to back in this run)\n\n")
		md.WriteString(tlsCost.String())
	}
	md.WriteString("## All runs\n\n")
	if err := service.WriteMarkdown(&md, rs); err != nil {
		return err
	}
	var cdf []*service.Result
	for _, r := range rs {
		if r.Clients == 64 && r.Mix == "default" && r.TargetLive == rs[0].TargetLive {
			cdf = append(cdf, r)
		}
	}
	files := map[string]string{
		"results.md":      md.String(),
		"throughput.svg":  service.ThroughputSVG(rs),
		"latency-cdf.svg": service.LatencyCDFSVG(cdf, service.OpReserve, "Reserve latency CDF, 64 clients, default mix"),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(out, name), []byte(body), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}
