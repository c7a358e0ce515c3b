package jepsen

import (
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
	for _, f := range []string{"node-name", "raft-addr", "raft-advertise", "gossip-addr", "http-advertise", "bootstrap-expect", "retry-join"} {
		fs.String(f, "", "")
	}
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
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
		fmt.Sprintf("-retry-join 127.0.0.1:%d", c.Node("n2").GossipPort), "-bootstrap-expect 3"} {
		if !strings.Contains(args, want) {
			t.Errorf("agent args %q lack %q", args, want)
		}
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
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + n2.APIProxy.Addr() + "/healthz")
	if err != nil {
		t.Fatalf("n2's proxy does not reach its new port: %v", err)
	}
	resp.Body.Close()
}
