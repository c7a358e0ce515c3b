package rpc_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEdgeReachesTheLogOnlyThroughTheLedger keeps the API edge apart from
// what sits behind the ledger contract: no package that rpc (or its Go
// client) imports, directly or through others, may be the FSM, the
// planner or the cluster layer. A request reaches them only through
// package ledger's interfaces, implemented outside rpc.
func TestEdgeReachesTheLogOnlyThroughTheLedger(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("no go command to list dependencies: %v", err)
	}
	const mod = "github.com/ledgerd/ledgerd/"
	forbidden := []string{mod + "fsm", mod + "planner", mod + "cluster", mod + "ledger/replicated", mod + "agent"}
	for _, pkg := range []string{mod + "rpc", mod + "rpc/client"} {
		out, err := exec.Command("go", "list", "-tags", "hashicorpmetrics", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed only %d packages: %q", pkg, len(deps), deps)
		}
		for _, d := range deps {
			for _, f := range forbidden {
				if d == f || strings.HasPrefix(d, f+"/") {
					t.Errorf("%s depends on %s: the edge must reach the log only through package ledger", pkg, d)
				}
			}
		}
	}
}
