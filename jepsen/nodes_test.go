package jepsen

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/agent/pki"
	"github.com/ledgerd/ledgerd/internal/testwait"
	"github.com/ledgerd/ledgerd/rpc"
)

// TestMain lets the test binary double as a stand-in agent for the process
// manager tests: with JEPSEN_FAKE_AGENT=1 it parses the agent flags, writes
// a marker into its data dir, answers HTTP on its API address (exiting
// like the agent if the address is taken) and waits to be signalled.
func TestMain(m *testing.M) {
	if os.Getenv("JEPSEN_FAKE_AGENT") == "1" && len(os.Args) > 1 && os.Args[1] == "agent" {
		os.Exit(fakeAgent(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func fakeAgent(args []string) int {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "")
	httpAddr := fs.String("http-addr", "", "")
	cert, key, ca := fs.String("tls-cert-file", "", ""), fs.String("tls-key-file", "", ""), fs.String("tls-ca-file", "", "")
	requireCert := fs.Bool("tls-http-require-client-cert", false, "")
	insecure := fs.Bool("insecure", false, "")
	for _, f := range []string{"node-name", "raft-addr", "raft-advertise", "gossip-addr", "http-advertise", "bootstrap-expect", "retry-join", "gossip-key", "tokens-file"} {
		fs.String(f, "", "")
	}
	fs.Bool("tls-verify-incoming", false, "")
	fs.Bool("tls-http", false, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := os.WriteFile(filepath.Join(*dataDir, "marker"), []byte("x"), 0o644); err != nil {
		return 3
	}
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 4
	}
	if !*insecure {
		// Like the real agent: TLS with the node's certificate, clients
		// verified against the cluster CA.
		kp, err := tls.LoadX509KeyPair(*cert, *key)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 5
		}
		pem, err := os.ReadFile(*ca)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 5
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		conf := &tls.Config{Certificates: []tls.Certificate{kp}, ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven}
		if *requireCert {
			conf.ClientAuth = tls.RequireAndVerifyClientCert
		}
		ln = tls.NewListener(ln, conf)
	}
	_ = http.Serve(ln, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	return 0
}

// procState returns the state letter of /proc/<pid>/stat (R, S, T, Z, ...).
func procState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return strings.Fields(s[i+1:])[0]
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, 10*time.Second, what, cond)
}

// TestClusterProcesses drives the process manager against stand-in agents:
// start, pause/resume (SIGSTOP/SIGCONT), kill -9 and restart, wipe and
// rejoin as a fresh server, partitions on the proxies, and Close.
func TestClusterProcesses(t *testing.T) {
	t.Setenv("JEPSEN_FAKE_AGENT", "1")
	dir := t.TempDir()
	c, err := NewCluster(ClusterConfig{Bin: os.Args[0], Dir: dir, Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Names() {
		waitFor(t, n+" marker", func() bool {
			_, err := os.Stat(filepath.Join(dir, n, "marker"))
			return err == nil
		})
	}
	pid := func(n string) int { return c.pids()[n] }
	if got := len(c.pids()); got != 3 {
		t.Fatalf("%d running, want 3", got)
	}

	// Every node advertises its proxies and joins the others' gossip.
	args := strings.Join(c.AgentArgs(c.Node("n1")), " ")
	for _, want := range []string{"-raft-advertise " + c.Node("n1").RaftProxy.Addr(), "-http-advertise " + c.Node("n1").APIProxy.Addr(),
		fmt.Sprintf("-retry-join 127.0.0.1:%d", c.Node("n2").GossipPort), "-bootstrap-expect 3",
		"-tls-cert-file " + filepath.Join(dir, "pki", "server-n1.pem"), "-tls-ca-file " + c.Security().CAFile,
		"-tls-verify-incoming=true", "-tls-http=true", "-tls-http-require-client-cert=true",
		"-gossip-key " + c.Security().GossipKey, "-tokens-file " + c.Security().TokensFile} {
		if !strings.Contains(args, want) {
			t.Errorf("agent args %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "-insecure") {
		t.Errorf("a default cluster runs insecure: %q", args)
	}

	p1 := pid("n1")
	if err := c.Pause("n1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "n1 stopped", func() bool { return procState(t, p1) == "T" })
	if err := c.Resume("n1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "n1 continued", func() bool { return procState(t, p1) != "T" })

	p2 := pid("n2")
	if err := c.Kill("n2"); err != nil {
		t.Fatal(err)
	}
	if c.Running("n2") {
		t.Fatal("n2 running after kill")
	}
	if err := c.StartNode("n2"); err != nil {
		t.Fatal(err)
	}
	if !c.Running("n2") || pid("n2") == p2 {
		t.Fatalf("n2 not restarted as a new process (pid %d, was %d)", pid("n2"), p2)
	}

	// Killing a paused node works (SIGKILL needs no SIGCONT).
	if err := c.Pause("n2"); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill("n2"); err != nil {
		t.Fatal(err)
	}

	if err := c.Wipe("n3"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "n3")); !os.IsNotExist(err) {
		t.Fatalf("n3 data dir survived a wipe: %v", err)
	}
	if a := c.AgentArgs(c.Node("n3")); !slices.Contains(a, "-bootstrap-expect") || a[slices.Index(a, "-bootstrap-expect")+1] != "0" {
		t.Fatalf("a wiped node must join, not bootstrap: %v", a)
	}
	if err := c.StartNode("n3"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "n3 marker after wipe", func() bool {
		_, err := os.Stat(filepath.Join(dir, "n3", "marker"))
		return err == nil
	})

	// Partition {n1} | {n2, n3}: each side's proxies cut the other side.
	c.Partition([]string{"n1"}, []string{"n2", "n3"})
	cut := func(src, dst string) bool {
		n := c.Node(dst)
		return n.RaftProxy.faultsFor(src).Cut && n.APIProxy.faultsFor(src).Cut
	}
	for _, l := range [][2]string{{"n1", "n2"}, {"n2", "n1"}, {"n1", "n3"}, {"n3", "n1"}} {
		if !cut(l[0], l[1]) {
			t.Errorf("link %s->%s not cut", l[0], l[1])
		}
	}
	if cut("n2", "n3") || cut("n3", "n2") {
		t.Error("link inside the majority cut")
	}
	c.Heal()
	if cut("n1", "n2") {
		t.Error("link still cut after Heal")
	}

	pids := c.pids()
	c.Close()
	for n, p := range pids {
		if st := procState(t, p); st != "" && st != "Z" {
			t.Errorf("%s (pid %d) still alive after Close: state %s", n, p, st)
		}
	}
}

// TestClusterStartMovesOffTakenPorts: a node whose reserved port something
// else bound before its first start comes up on fresh ports, and its
// proxy, which the other nodes dial, forwards to the new ones.
func TestClusterStartMovesOffTakenPorts(t *testing.T) {
	t.Setenv("JEPSEN_FAKE_AGENT", "1")
	c, err := NewCluster(ClusterConfig{Bin: os.Args[0], Dir: t.TempDir(), Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n2 := c.Node("n2")
	taken := n2.APIAddr()
	squatter, err := net.Listen("tcp", taken)
	if err != nil {
		t.Fatal(err)
	}
	defer squatter.Close()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if n2.APIAddr() == taken || !c.Running("n2") {
		t.Fatalf("n2 still on the taken %s (running %v)", taken, c.Running("n2"))
	}
	if args := strings.Join(c.AgentArgs(n2), " "); !strings.Contains(args, "-http-addr "+n2.APIAddr()) {
		t.Fatalf("agent args %q lack the new address %s", args, n2.APIAddr())
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: c.Security().ClientTLS()}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://" + n2.APIProxy.Addr() + "/healthz")
	if err != nil {
		t.Fatalf("n2's proxy does not reach its new port: %v", err)
	}
	resp.Body.Close()
}

// TestSecurity: the material NewSecurity makes is what a secured agent
// needs — server certificates with the server role for each node (and
// for no one else), a client certificate without it, a gossip key of 32
// bytes, a tokens file naming the token as an operator — and an insecure
// cluster, which only a test about the insecure mode asks for, says so.
func TestSecurity(t *testing.T) {
	dir := t.TempDir()
	s, err := NewSecurity(dir, []string{"n1", "n2"})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	caPEM, err := os.ReadFile(s.CAFile)
	if err != nil || !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("CA file %s: %v", s.CAFile, err)
	}
	load := func(certFile, keyFile string) *x509.Certificate {
		t.Helper()
		kp, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kp.Leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Fatalf("%s does not verify against the cluster CA: %v", certFile, err)
		}
		return kp.Leaf
	}
	for _, n := range []string{"n1", "n2"} {
		args, err := s.AgentArgs(n)
		if err != nil {
			t.Fatal(err)
		}
		flags := map[string]string{}
		for i := 0; i < len(args); i++ {
			k, v, ok := strings.Cut(args[i], "=")
			if !ok && i+1 < len(args) {
				v, i = args[i+1], i+1
			}
			flags[k] = v
		}
		cert := load(flags["-tls-cert-file"], flags["-tls-key-file"])
		if !pki.IsServer(cert) || cert.Subject.CommonName != n {
			t.Errorf("%s: certificate %q lacks the server role or the node name", n, cert.Subject.CommonName)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1"}); err != nil {
			t.Errorf("%s: clients dial 127.0.0.1, the certificate is not valid there: %v", n, err)
		}
		for k, want := range map[string]string{"-tls-ca-file": s.CAFile, "-tls-verify-incoming": "true", "-tls-http": "true",
			"-tls-http-require-client-cert": "true", "-gossip-key": s.GossipKey, "-tokens-file": s.TokensFile} {
			if flags[k] != want {
				t.Errorf("%s: %s = %q, want %q", n, k, flags[k], want)
			}
		}
	}
	if _, err := s.AgentArgs("n3"); err == nil {
		t.Error("a node without a certificate got agent flags")
	}
	if c := load(s.ClientCertFile, s.ClientKeyFile); pki.IsServer(c) {
		t.Error("the clients' certificate carries the server role")
	}
	if k, err := base64.StdEncoding.DecodeString(s.GossipKey); err != nil || len(k) != 32 {
		t.Errorf("gossip key %q: %d bytes, %v", s.GossipKey, len(k), err)
	}
	auth, err := rpc.LoadAuthFile(s.TokensFile)
	if err != nil {
		t.Fatal(err)
	}
	if auth == nil || !strings.Contains(mustRead(t, s.TokensFile), `"operator":true`) || !strings.Contains(mustRead(t, s.TokensFile), s.Token) {
		t.Errorf("tokens file does not make %q an operator: %s", s.Token, mustRead(t, s.TokensFile))
	}

	c, err := NewCluster(ClusterConfig{Bin: "ledgerd", Dir: t.TempDir(), Nodes: 1, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if args := c.AgentArgs(c.Node("n1")); c.Security() != nil || !slices.Contains(args, "-insecure") || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-tls") }) {
		t.Errorf("insecure cluster: security %v, args %v", c.Security(), args)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
