package service

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/ledgerd/ledgerd/agent/pki"
)

// TestRawRaftRuns drives a one-node raw raft cluster and a three-node one
// on a mutual-TLS transport briefly: every operation succeeds, nothing is
// rejected, reads run.
func TestRawRaftRuns(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes int
		tls   *tls.Config
		store string
	}{{"1 node, tcp", 1, nil, ""}, {"3 nodes, tls", 3, raftTLS(t), "boltdb"}, {"3 nodes, wal", 3, nil, "wal"}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRawRaft(tc.nodes, t.TempDir(), tc.tls, tc.store)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			res, err := Run(context.Background(), r, Config{
				Clients: 2, Live: 20, Duration: time.Second, Resources: 2, Capacity: 16,
				Horizon: time.Hour, Mix: DefaultMix, Seed: 3,
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Errors) != 0 || res.AcceptanceRate != 1 || res.OpsPerSecond <= 0 {
				t.Fatalf("errors %v acceptance %.2f ops/s %.0f", res.Errors, res.AcceptanceRate, res.OpsPerSecond)
			}
		})
	}
	if _, err := NewRawRaft(0, "", nil, ""); err == nil {
		t.Fatal("zero nodes accepted")
	}
}

// raftTLS is a mutual-TLS configuration for raw raft nodes on loopback,
// with a server certificate of agent/pki (what a secured ledgerd uses).
func raftTLS(t *testing.T) *tls.Config {
	t.Helper()
	ca, err := pki.NewCA("raw raft CA", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, k, err := ca.Issue(pki.Request{Server: true, Name: "raft", Now: time.Now(), ValidFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	kp, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{kp}, RootCAs: pool, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
}

// TestReportRendering checks that the plots are well-formed XML with one
// curve per series and that the table has a row per cell (the bars have
// their own test, bars_test.go).
func TestReportRendering(t *testing.T) {
	mk := func(sys, label, mix string, clients int, committed float64) *Result {
		r := &Result{System: sys, Label: label, Mix: mix, Clients: clients, TargetLive: 100, Seconds: 1, Committed: committed, OpsPerSecond: committed * 2, CommittedP99: 100 / committed}
		for o := range numOps {
			s := OpStats{Op: Op(o).String(), OK: 1}
			for q := 1; q <= 100; q++ {
				s.CDF = append(s.CDF, float64(q)/committed)
			}
			r.Ops = append(r.Ops, s)
		}
		return r
	}
	rs := []*Result{
		mk("ledgerd", "3 nodes", "default", 16, 500), mk("ledgerd", "3 nodes", "default", 64, 900),
		mk("etcd", "3 nodes", "default", 16, 100), mk("etcd", "3 nodes", "default", 64, 200),
		mk("ledgerd", "3 nodes", "reserve", 64, 1000), mk("raw raft", "3 nodes", "reserve", 64, 1500),
	}
	for name, svg := range map[string]string{"throughput": ThroughputSVG(rs), "cdf": LatencyCDFSVG(rs[:4], OpReserve, "t")} {
		d := xml.NewDecoder(strings.NewReader(svg))
		lines := 0
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: not XML: %v", name, err)
			}
			if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
				lines++
			}
		}
		if want := map[string]int{"throughput": 2, "cdf": 4}[name]; lines != want {
			t.Fatalf("%s: %d curves, want %d", name, lines, want)
		}
	}
	rs = append(rs, mk("ledgerd", unaryLabel, "default", 64, 300), mk("postgresql", PGStandbyLabel, "default", 64, 450))
	var b strings.Builder
	if err := WriteMarkdown(&b, rs); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), "\n"); got != len(rs)+2 {
		t.Fatalf("table has %d lines, want %d", got, len(rs)+2)
	}
}

// TestRawRaftWaitsOutAnElection: with no node leader (an election under
// way) an Apply waits for one instead of failing at once, and stops when
// its context ends, or after about a second without a leader.
func TestRawRaftWaitsOutAnElection(t *testing.T) {
	r := &RawRaft{} // no nodes: never a leader
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.apply(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("apply with no leader and a cancelled context = %v, want context.Canceled", err)
	}
	if err := r.apply(context.Background(), 1); !errors.Is(err, raft.ErrNotLeader) {
		t.Fatalf("apply with no leader = %v, want raft.ErrNotLeader after waiting", err)
	}
}
