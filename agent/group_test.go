package agent

import (
	"errors"
	"testing"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// TestCheckForwardedRefusesGroups: a peer may forward admissions, which
// the leader then groups, but never a group of its own making (it would
// skip the leader's check that every server can apply groups).
func TestCheckForwardedRefusesGroups(t *testing.T) {
	enc := func(c *fsmv1.Command) []byte {
		b, err := fsm.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		if b, err = fsm.Stamp(b, 5_000); err != nil {
			t.Fatal(err)
		}
		return b
	}
	commit := func(id string) []byte {
		return enc(&fsmv1.Command{Type: fsmv1.Command_TYPE_COMMIT, Owner: "a",
			Payload: &fsmv1.Command_Target{Target: &fsmv1.Target{Id: id}}})
	}
	if err := checkForwarded(commit("r1")); err != nil {
		t.Fatalf("a forwarded commit: %v", err)
	}
	group, n := fsm.GroupCommands([][]byte{commit("r1"), commit("r2")})
	if n != 2 {
		t.Fatalf("grouped %d", n)
	}
	if _, err := fsm.Decode(group); err != nil {
		t.Fatalf("the group itself is well formed: %v", err)
	}
	if err := checkForwarded(group); !errors.Is(err, fsm.ErrMalformed) {
		t.Fatalf("a forwarded group: %v, want ErrMalformed", err)
	}
}
