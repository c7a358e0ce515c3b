package recovery

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// TestDiffStates: two replicas that applied the same request at different
// log indices (so it got different IDs and versions) are told apart, the
// rows each holds alone named; replicas that applied the same entries
// agree, and so do their state hashes.
func TestDiffStates(t *testing.T) {
	build := func(order []string) *fsm.FSM {
		f, err := fsm.New(fsm.Config{})
		if err != nil {
			t.Fatal(err)
		}
		f.ApplyCommand(1, encodeAt(t, 1000, &fsmv1.Command{Type: fsmv1.Command_TYPE_CREATE_RESOURCE, Owner: "op",
			Payload: &fsmv1.Command_CreateResource{CreateResource: &fsmv1.CreateResource{Name: "r", Capacity: 40, Unit: "cores"}}}))
		for i, key := range order {
			cmd := reserveCmd("", key, 1, 500)
			if key == "" {
				cmd = &fsmv1.Command{Type: fsmv1.Command_TYPE_EXPIRE, Payload: &fsmv1.Command_Expire{Expire: &fsmv1.Expire{}}}
			}
			f.ApplyCommand(uint64(2+i), encodeAt(t, 1000+int64(i), cmd))
		}
		return f
	}
	a := build([]string{"probe-1", "", "x"})
	b := build([]string{"", "probe-1", "x"})
	c := build([]string{"probe-1", "", "x"})
	diff, err := DiffStates(a, b, 10)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(diff, "\n")
	if !strings.Contains(text, fsm.AutoID(2)+" only in the first") || !strings.Contains(text, fsm.AutoID(3)+" only in the second") {
		t.Fatalf("diff of replicas that applied probe-1 at 2 and at 3:\n%s", text)
	}
	if diff, err := DiffStates(a, c, 10); err != nil || len(diff) != 0 {
		t.Fatalf("identical replicas differ: %v, %v", diff, err)
	}
	hash := func(f *fsm.FSM) [32]byte {
		h, err := (&Replica{FSM: f}).StateHash()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if hash(a) != hash(c) || hash(a) == hash(b) {
		t.Fatal("state hashes do not follow the states")
	}
	if d, _ := DiffStates(a, b, 1); len(d) != 1 {
		t.Fatalf("max 1 gave %d lines", len(d))
	}
}

// TestDiffSeries: a series one replica holds alone is named whichever
// replica holds it, and equal series give no line.
func TestDiffSeries(t *testing.T) {
	s := func(id string, booked uint32) *fsmv1.Series { return &fsmv1.Series{Id: id, Owner: "o", Booked: booked} }
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	diffSeries([]*fsmv1.Series{s("a", 1), s("b", 2)}, []*fsmv1.Series{s("a", 1), s("b", 3), s("c", 1)}, add)
	got := strings.Join(lines, "\n")
	if len(lines) != 2 || !strings.Contains(got, "series b differs") || !strings.Contains(got, "series c only in the second") {
		t.Fatalf("lines:\n%s\nwant b differing and c only in the second", got)
	}
	lines = nil
	diffSeries([]*fsmv1.Series{s("c", 1)}, nil, add)
	if len(lines) != 1 || !strings.Contains(lines[0], "series c differs") {
		t.Fatalf("a series only in the first: %v", lines)
	}
}
