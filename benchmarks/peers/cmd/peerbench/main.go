// Command peerbench drives an embedded etcd cluster or a PostgreSQL server
// with the same closed-loop booking workload as loadgen (package
// benchmarks/service) and prints the same result table.
//
//	go run ./cmd/peerbench -system etcd -nodes 3 -clients 1,16,64 -live 10000
//	go run ./cmd/peerbench -system postgres -dsn postgres://postgres@127.0.0.1:5499/postgres -clients 64
//	go run ./cmd/peerbench -system postgres -nodes 2 -label "primary + sync standby" -cpu-pids 4242,4343 \
//	    -dsn postgres://postgres@127.0.0.1:5501/postgres -clients 64
//
// The PostgreSQL servers are started by the caller (scripts/bench-service.sh);
// -cpu-pids names their postmasters so that the CPU of every server process
// is counted per operation.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/ledgerd/ledgerd/benchmarks/peers"
	"github.com/ledgerd/ledgerd/benchmarks/service"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peerbench:", err)
		os.Exit(1)
	}
}

func run() error {
	var f service.Flags
	f.Register(flag.CommandLine)
	system := flag.String("system", "etcd", "etcd or postgres")
	nodes := flag.Int("nodes", 3, "etcd: members to start; postgres: servers behind -dsn, for the report (default 1)")
	port := flag.Int("port", 23790, "etcd: first client port (peer ports are 100 higher)")
	dir := flag.String("dir", "", "etcd data directory (default: a temporary one)")
	dsn := flag.String("dsn", "postgres://postgres@127.0.0.1:5499/postgres", "PostgreSQL connection string")
	conns := flag.Int("conns", 0, "PostgreSQL pool size (0 = the largest client count)")
	caFile := flag.String("tls-ca-file", "", "etcd: PEM CA; with -tls-cert-file and -tls-key-file the members and the client use mutual TLS (PostgreSQL: put sslmode in -dsn)")
	certFile := flag.String("tls-cert-file", "", "etcd: certificate of the members and the client (127.0.0.1, server and client auth)")
	keyFile := flag.String("tls-key-file", "", "etcd: its key")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	var sys service.System
	n := *nodes
	switch *system {
	case "etcd":
		var sec *peers.EtcdTLS
		if *caFile != "" || *certFile != "" || *keyFile != "" {
			if *caFile == "" || *certFile == "" || *keyFile == "" {
				return fmt.Errorf("-tls-ca-file, -tls-cert-file and -tls-key-file go together")
			}
			sec = &peers.EtcdTLS{CA: *caFile, Cert: *certFile, Key: *keyFile}
		}
		e, err := peers.NewEtcd(n, *port, *dir, sec)
		if err != nil {
			return err
		}
		defer func() { fmt.Printf("etcd compare conflicts retried: %d\n", e.Conflicts.Load()) }()
		sys = e
	case "postgres":
		counts, err := f.ClientCounts()
		if err != nil {
			return err
		}
		c := *conns
		for _, x := range counts {
			c = max(c, x)
		}
		p, err := peers.NewPostgres(ctx, *dsn, int32(c))
		if err != nil {
			return err
		}
		sys, n = p, 1
		flag.Visit(func(fl *flag.Flag) {
			if fl.Name == "nodes" {
				n = *nodes // a primary and its standbys
			}
		})
		if n <= 0 {
			return fmt.Errorf("-nodes %d: must be > 0", n)
		}
	default:
		return fmt.Errorf("-system %q: want etcd or postgres", *system)
	}
	defer sys.Close()
	if f.Label == "" {
		f.Label = fmt.Sprintf("%d nodes", n)
	}
	_, err := service.RunAll(ctx, sys, f, n, os.Stdout)
	return err
}
