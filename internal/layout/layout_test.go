package layout

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/ledgerd/ledgerd/"

// never lists the imports the layout forbids: a package under the first
// part may not import a package under the second, directly. Parts are
// folders of the module; "cmd" is every command.
var never = []struct{ from, to, why string }{
	{"planner", "fsm", "the core knows no log"},
	{"planner", "cluster", "no I/O in the core"},
	{"planner", "rpc", "no wire in the core"},
	{"fsm", "cluster", "apply knows no network"},
	{"fsm", "rpc", "apply knows no API"},
	{"cluster", "rpc", "wiring knows no API"},
	{"cluster", "fsm", "wiring knows no reservation"},
	{"jepsen", "fsm", "black box"},
	{"jepsen", "cluster", "black box"},
	{"rpc", "fsm", "the edge talks to the ledger"},
	{"rpc", "cluster", "the edge talks to the ledger"},
	{"rpc", "planner", "the edge talks to the ledger"},
	{"rpc", "ledger/replicated", "the edge talks to the ledger's contract"},
	{"cmd", "fsm", "main assembles through agent"},
	{"cmd", "cluster", "main assembles through agent"},
	{"ledger", "rpc", "the ledger knows no API edge"},
	{"agent", "cmd", "the assembly knows no command line"},
	{"series", "fsm", "expansion happens on the leader, before the log"},
	{"series", "cluster", "expansion knows no network"},
	{"series", "rpc", "expansion knows no API"},
	{"bridge", "fsm", "the bridge follows the ledger's contract"},
	{"bridge", "cluster", "the bridge follows the ledger's contract"},
	{"bridge", "planner", "the bridge follows the ledger's contract"},
	{"bridge", "rpc", "the bridge follows the ledger's contract"},
	{"fsm", "bridge", "apply knows no resource manager"},
	{"planner", "bridge", "the core knows no resource manager"},
}

// under reports whether package path p lies in part (a folder of the
// module, subfolders included).
func under(p, part string) bool {
	rel, ok := strings.CutPrefix(p, mod)
	return ok && (rel == part || strings.HasPrefix(rel, part+"/"))
}

type pkg struct {
	ImportPath string
	Imports    []string
}

// TestNeverRules lists every package of the module with its direct
// (non-test) imports and fails on each import a never rule forbids.
func TestNeverRules(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("no go command to list packages: %v", err)
	}
	cmd := exec.Command("go", "list", "-tags", "hashicorpmetrics", "-json", mod+"...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
		for _, imp := range p.Imports {
			for _, r := range never {
				if under(p.ImportPath, r.from) && under(imp, r.to) {
					t.Errorf("%s imports %s: never %s -> %s (%s)", p.ImportPath, imp, r.from, r.to, r.why)
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("listed only %d packages", n)
	}
}

// TestUnderIsByFolder pins what "under a part" means: whole path
// segments, so rpcx would not be under rpc.
func TestUnderIsByFolder(t *testing.T) {
	for _, c := range []struct {
		p, part string
		want    bool
	}{
		{mod + "rpc", "rpc", true},
		{mod + "rpc/client", "rpc", true},
		{mod + "rpcx", "rpc", false},
		{mod + "ledger/replicated", "ledger", true},
		{"example.com/rpc", "rpc", false},
	} {
		if got := under(c.p, c.part); got != c.want {
			t.Errorf("under(%q, %q) = %v, want %v", c.p, c.part, got, c.want)
		}
	}
}
