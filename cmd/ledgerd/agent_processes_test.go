package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/internal/testnet"
)

// agentProc is one real `ledgerd agent` process.
type agentProc struct {
	name, http, raft, gossip string
	args                     []string
	cmd                      *exec.Cmd
	log                      *bytes.Buffer // read only after exited is closed
	exited                   chan struct{}
	waitErr                  error // set when exited is closed
}

// start runs the agent process (again) with its arguments.
func (p *agentProc) start(t *testing.T, bin string) {
	t.Helper()
	p.cmd = exec.Command(bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		p.waitErr = cmd.Wait()
		close(exited)
	}(p.cmd, p.exited)
}

// stop kills the process if it still runs and waits for it.
func (p *agentProc) stop() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// startAgents starts three agents that bootstrap together and waits until
// each is ready. Ports are reserved (see testnet), but an unrelated program
// may still have bound one, which only shows as an agent exiting: then all
// three start over on fresh ports and data directories.
func startAgents(t *testing.T, bin string) []*agentProc {
	t.Helper()
	var procs []*agentProc
	testnet.Start(t, 9, func(a []string) error {
		data := t.TempDir()
		procs = make([]*agentProc, 3)
		for i := range procs {
			procs[i] = &agentProc{name: fmt.Sprintf("head-%d", i+1), http: a[3*i], raft: a[3*i+1], gossip: a[3*i+2], log: new(bytes.Buffer)}
		}
		for i, p := range procs {
			args := []string{"agent", "-node-name", p.name, "-data-dir", filepath.Join(data, p.name),
				"-http-addr", p.http, "-raft-addr", p.raft, "-gossip-addr", p.gossip, "-bootstrap-expect", "3",
				"-dead-server-grace", "5s", "-log-format", "json"}
			for j, o := range procs {
				if j != i {
					args = append(args, "-retry-join", o.gossip)
				}
			}
			p.args = args
			p.start(t, bin)
		}
		if err := waitReady(procs, 60*time.Second); err != nil {
			for _, p := range procs {
				p.stop()
			}
			return err
		}
		return nil
	})
	return procs
}

// waitReady waits until every agent answers /readyz with 200, or fails
// with the log of the first that exits: one that cannot bind a port exits
// while the others wait for it forever.
func waitReady(procs []*agentProc, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	ready := map[*agentProc]bool{}
	for {
		var last error
		for _, p := range procs {
			select {
			case <-p.exited:
				return fmt.Errorf("%s exited before ready (%v): %s", p.name, p.waitErr, tail(p.log.String(), 2000))
			default:
			}
			if ready[p] {
				continue
			}
			resp, err := http.Get("http://" + p.http + "/readyz")
			if err != nil {
				last = err
				continue
			}
			resp.Body.Close()
			if ready[p] = resp.StatusCode == http.StatusOK; !ready[p] {
				last = fmt.Errorf("%s: /readyz: %s", p.name, resp.Status)
			}
		}
		if last == nil && len(ready) == len(procs) {
			return nil
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return fmt.Errorf("agents not ready after %s (last: %v)", timeout, last)
		}
	}
}

// pollInterval is how often the tests look again at another process's
// HTTP endpoints, which cannot say when they change; every such wait
// also has a deadline that fails the test loudly.
const pollInterval = 100 * time.Millisecond

// pollUntil asks check on a ticker until it reports done, or fails the
// test with check's last explanation after timeout.
func pollUntil(t *testing.T, timeout time.Duration, what string, check func() (bool, string)) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		done, last := check()
		if done {
			return
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("%s: not within %s (%s)", what, timeout, last)
		}
	}
}

// TestThreeAgentProcesses starts three `ledgerd agent -bootstrap-expect 3`
// processes on loopback, writes through the leader's /internal/apply
// (which never forwards; forwarding is covered in cluster), SIGKILLs it,
// and checks that the survivors elect a new leader, keep every
// acknowledged write and keep accepting writes; then SIGTERMs one survivor
// and expects a clean exit. It builds the binary, so it only runs with
// LEDGERD_E2E=1 (scripts/three-nodes.sh sets it).
func TestThreeAgentProcesses(t *testing.T) {
	if os.Getenv("LEDGERD_E2E") == "" {
		t.Skip("set LEDGERD_E2E=1 (or run scripts/three-nodes.sh) to start real agent processes")
	}
	bin := filepath.Join(t.TempDir(), "ledgerd")
	build := exec.Command("go", "build", "-tags", "hashicorpmetrics", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	start := time.Now()
	procs := startAgents(t, bin)
	t.Cleanup(func() {
		for _, p := range procs {
			p.stop()
			if t.Failed() {
				t.Logf("--- %s log (tail) ---\n%s", p.name, tail(p.log.String(), 3000))
			}
		}
	})
	t.Logf("three agents ready in %s", time.Since(start).Round(time.Millisecond))

	leader := findLeader(t, procs)
	mustApply(t, procs, createResource("cpu", 128))
	var acked []string
	for i := range 10 {
		id := fmt.Sprintf("before-%d", i)
		mustApply(t, procs, reserve(id, 4))
		acked = append(acked, id)
	}

	killed := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-leader.exited
	var alive []*agentProc
	for _, p := range procs {
		if p != leader {
			alive = append(alive, p)
		}
	}
	newLeader := findLeader(t, alive)
	t.Logf("leader %s killed; %s leads after %s", leader.name, newLeader.name, time.Since(killed).Round(time.Millisecond))
	for i := range 10 {
		id := fmt.Sprintf("after-%d", i)
		mustApply(t, alive, reserve(id, 4))
		acked = append(acked, id)
	}
	// Every acknowledged reservation is still there: replaying its
	// idempotency key returns the stored first result.
	for _, id := range acked {
		res := mustApply(t, alive, reserve(id, 4))
		if !res.GetReplayed() || res.GetReservation().GetId() != id {
			t.Fatalf("reservation %s lost after leader crash: %v", id, res)
		}
	}
	t.Logf("%d acknowledged writes survived the leader's SIGKILL", len(acked))

	// The killed leader restarts on its data and catches up with
	// everything committed while it was down.
	leader.log.Reset() // the process has exited: nothing writes to it
	leader.start(t, bin)
	if err := waitReady([]*agentProc{leader}, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	target := status(t, findLeader(t, procs)).CommitIndex
	pollUntil(t, 30*time.Second, "restarted "+leader.name+" catches up", func() (bool, string) {
		applied := status(t, leader).Applied
		return applied >= target, fmt.Sprintf("applied %d < commit %d", applied, target)
	})
	t.Logf("restarted %s caught up to index %d", leader.name, target)

	// SIGTERM leaves cleanly.
	p := alive[0]
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
		if p.waitErr != nil {
			t.Fatalf("%s exited after SIGTERM: %v", p.name, p.waitErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not exit within 30s of SIGTERM", p.name)
	}
}

type nodeStatus struct {
	State       string `json:"state"`
	CommitIndex uint64 `json:"commit_index"`
	Applied     uint64 `json:"applied"`
}

func status(t *testing.T, p *agentProc) nodeStatus {
	t.Helper()
	var st nodeStatus
	resp, err := http.Get("http://" + p.http + "/internal/status")
	if err != nil {
		return st
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&st)
	return st
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func findLeader(t *testing.T, procs []*agentProc) *agentProc {
	t.Helper()
	var leader *agentProc
	pollUntil(t, 30*time.Second, "a leader", func() (bool, string) {
		for _, p := range procs {
			resp, err := http.Get("http://" + p.http + "/internal/status")
			if err != nil {
				continue
			}
			var st struct {
				State string `json:"state"`
			}
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err == nil && st.State == "Leader" {
				leader = p
				return true, ""
			}
		}
		return false, "no agent says it leads"
	})
	return leader
}

func createResource(name string, capacity int64) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_CREATE_RESOURCE, IdempotencyKey: "create-" + name, Owner: "default",
		Payload: &fsmv1.Command_CreateResource{CreateResource: &fsmv1.CreateResource{Name: name, Capacity: capacity, Unit: "cores"}}}
}

func reserve(id string, cores int64) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_RESERVE, IdempotencyKey: id, Owner: "default",
		Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{
			Id: id, Parts: []*fsmv1.Part{{Resource: "cpu", Amount: cores}}, DurationMillis: 3_600_000,
		}}}
}

// mustApply posts cmd to the current leader's /internal/apply, retrying
// refusals (not the leader, no leader yet) with the same idempotency key.
func mustApply(t *testing.T, procs []*agentProc, cmd *fsmv1.Command) *fsmv1.Result {
	t.Helper()
	b, err := fsm.Encode(cmd)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		p := findLeader(t, procs)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.http+"/internal/apply", bytes.NewReader(b))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				res, err := fsm.DecodeResult(body)
				if err != nil {
					t.Fatal(err)
				}
				if res.GetStatus() != fsmv1.Result_STATUS_OK {
					t.Fatalf("%s on %s: %s %s", cmd.GetType(), p.name, res.GetStatus(), res.GetMessage())
				}
				return res
			}
			err = fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("%s: %v", cmd.GetType(), err)
		}
	}
}
