package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/internal/testwait"
)

// TestApprovalAcrossLeaderKill drives limits and approval through the CLI
// on three secured agent processes: the agents seed their limits from
// the tenant_limits config key (through the logged command), a tenant's
// request above the approval threshold waits as PENDING_APPROVAL, the
// leader is SIGKILLed, and on the survivors the operator lists and
// approves it; the tenant sees COMMITTED with the operator's note, a
// request over max_units is refused naming the limit, and the history
// holds every step. It builds the binary, so it only runs with
// LEDGERD_E2E=1.
func TestApprovalAcrossLeaderKill(t *testing.T) {
	bin := e2eBinary(t)
	sec := makePKI(t, bin, []string{"head-1", "head-2", "head-3"})
	const tenantToken = "e2e-physics-token"
	tokens := `{"tokens":[{"token":"` + sec.token + `","tenant":"ops","operator":true},{"token":"` + tenantToken + `","tenant":"physics"}]}`
	if err := os.WriteFile(sec.tokensFile, []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "limits.json")
	if err := os.WriteFile(conf, []byte(`{"tenant_limits": [
		{"tenant": "*", "resource": "cpu", "max_units": 96, "approval_above_units": 32, "approval_ttl": "2d"}
	]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	procs := startAgentsWith(t, bin, sec, []string{"-config", conf})
	stopWithLogs(t, procs)
	cli := func(token string, alive []*agentProc, args ...string) (string, string, error) {
		var addrs []string
		for _, p := range alive {
			addrs = append(addrs, p.http)
		}
		cmd := exec.Command(bin, append(args, "-addr", strings.Join(addrs, ","), "-token", token, "-ca-file", sec.ca, "-timeout", "10s")...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	// until runs the CLI until check accepts its output, failing after a
	// deadline with the last output (no leader yet, a dead node).
	until := func(what, token string, alive []*agentProc, check func(out string) bool, args ...string) string {
		t.Helper()
		var out, errOut string
		var err error
		ok := false
		defer func() {
			if !ok {
				t.Logf("%s: last output %q, stderr %q, err %v", what, out, errOut, err)
			}
		}()
		testwait.Every(t, 30*time.Second, 200*time.Millisecond, what, func() bool {
			out, errOut, err = cli(token, alive, args...)
			ok = err == nil && check(out)
			return ok
		})
		return out
	}
	ops := sec.token
	anyOut := func(string) bool { return true }

	// The configured limits arrive through the log, once.
	out := until("seeded limits", ops, procs, func(out string) bool { return strings.Contains(out, `"tenant":"*"`) },
		"tenant", "limits", "get", "-json")
	if n := strings.Count(out, "\n"); n != 1 {
		t.Fatalf("seeded entries: %q, want one", out)
	}
	until("create cpu", ops, procs, anyOut, "resources", "create", "cpu", "-capacity", "128", "-unit", "cores")

	// The tenant asks for 40 cores: above the threshold of 32.
	start := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Minute).Format(time.RFC3339)
	out = until("request", tenantToken, procs, anyOut, "reserve", "-res", "cpu=40", "-at", start, "-dur", "1h", "-key", "req-1", "-json")
	var r struct {
		ID             string `json:"id"`
		State          string `json:"state"`
		ApprovalReason string `json:"approval_reason"`
		DecisionReason string `json:"decision_reason"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.State != "RESERVATION_STATE_PENDING_APPROVAL" || r.ApprovalReason == "" {
		t.Fatalf("request: %q (%v)", out, err)
	}

	// The leader dies between the request and the decision.
	leader := findLeader(t, sec, procs)
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
	t.Logf("leader %s killed with request %s pending", leader.name, r.ID)

	until("approvals list", ops, alive, func(out string) bool {
		return strings.Contains(out, r.ID) && strings.Contains(out, "above the approval threshold 32")
	},
		"approvals", "list")
	// Its capacity is held: 96 - 40 leaves 56 for the tenant there.
	_, errOut, err := cli(tenantToken, alive, "reserve", "-res", "cpu=60", "-at", start, "-dur", "1h", "-key", "req-2")
	if err == nil || !strings.Contains(errOut, "refused: limit exceeded") || !strings.Contains(errOut, "max_units 96 units") || !strings.Contains(errOut, "56 units would fit") {
		t.Fatalf("over max_units: err %v, stderr %q", err, errOut)
	}
	out = until("approve", ops, alive, func(out string) bool { return strings.Contains(out, "COMMITTED") },
		"approvals", "approve", r.ID, "-reason", "ok for the run", "-key", "approve-1")
	if !strings.Contains(out, "decision: ok for the run") {
		t.Fatalf("approve output %q", out)
	}
	out = until("tenant sees it", tenantToken, alive, anyOut, "get", r.ID, "-json")
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.State != "RESERVATION_STATE_COMMITTED" || r.DecisionReason != "ok for the run" {
		t.Fatalf("tenant's view: %q (%v)", out, err)
	}
	out = until("history", ops, alive, func(out string) bool { return strings.Contains(out, "approved") }, "history", r.ID)
	for _, step := range []string{"approval_requested", "approved"} {
		if !strings.Contains(out, step) {
			t.Fatalf("history of %s lacks %s:\n%s", r.ID, step, out)
		}
	}
	out = until("usage", tenantToken, alive, func(out string) bool { return strings.Contains(out, `"booked_unit_seconds":"144000"`) }, "usage", "-json")
	t.Logf("usage of physics after the approval: %s", strings.TrimSpace(out))
}
