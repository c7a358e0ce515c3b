package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/internal/testbin"
)

// TestStalledConnectionsDoNotStarveReadyz runs an agent with a file limit
// of 512 and opens 1,000 connections to it from one address (127.0.0.2),
// each stalled in the middle of its headers. /readyz, asked from another
// address, must still answer, and the agent counts the refused
// connections. Before the connection caps such a flood ended in
// "accept4: too many open files" and /readyz timing out.
func TestStalledConnectionsDoNotStarveReadyz(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent process and opens a thousand connections")
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Max < 2048 {
		t.Skipf("the hard file limit %d leaves no room for 1,000 client connections", rl.Max)
	}
	if rl.Cur < 2048 {
		raised := rl
		raised.Cur = min(rl.Max, 4096)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl) }()
	}
	bin := testbin.Ledgerd(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", `ulimit -n 512 && exec "$0" agent -dev -http-addr 127.0.0.1:0 -log-level error`, bin)
	// The agent is killed, not shut down, so it never removes its dev
	// data dir: make that dir under the test's own temporary directory.
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	addrCh := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`ledgerd resources -addr (\S+)`)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addrCh <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	var addr string
	select {
	case addr = <-addrCh:
	case <-time.After(60 * time.Second):
		t.Fatal("dev agent not ready within 60s")
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	for i := range 1000 {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		_, _ = io.WriteString(c, "POST /ledgerd.v1.ResourceService/List HTTP/1.1\r\nHost: x\r\n") // and never more
		conns = append(conns, c)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatalf("/readyz with 1,000 stalled connections open: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz = %s %s", resp.Status, body)
	}
	resp, err = client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`(?m)^ledgerd_http_connections_refused_total (\d+)`).FindSubmatch(metrics)
	if m == nil || string(m[1]) == "0" {
		t.Fatalf("refused connections not counted: %q", m)
	}
	t.Logf("refused %s of 1,000 stalled connections; /readyz answered", m[1])
}
