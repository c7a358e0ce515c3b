package fsm

import (
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"
)

// appliedBytes returns the encoded Result of an Apply response (nil for
// anything but an *Applied).
func appliedBytes(v any) []byte {
	if a, ok := v.(*Applied); ok {
		return a.EncodedResult()
	}
	return nil
}

// TestAppliedMessageMatchesBytes applies a generated stream (lone
// entries and groups, through Apply and ApplyBatch) and checks, after the
// whole stream, that every Result message the FSM handed back still
// equals the decoding of its bytes: the leader reads the message instead
// of the bytes, so neither the entry that made it nor any later one may
// change what it shares with the state (stored rows), and ResultOf must
// give what DecodeResult gives.
func TestAppliedMessageMatchesBytes(t *testing.T) {
	g := &gen{r: rand.New(rand.NewPCG(23, 0x1ed9e4)), now: 1_000}
	h := newHarness(t, propConfig)
	cmds := g.stream(t, 400)
	var got []*Applied
	collect := func(v any) {
		switch v := v.(type) {
		case *Applied:
			got = append(got, v)
		case []any:
			for _, m := range v {
				a, ok := m.(*Applied)
				if !ok {
					t.Fatalf("group member answered %T, want *Applied", m)
				}
				got = append(got, a)
			}
		default:
			t.Fatalf("Apply returned %T, want *Applied or []any", v)
		}
	}
	index := uint64(0)
	for i := 0; i < len(cmds); {
		switch k := 1 + i%4; {
		case k == 4 && i+3 <= len(cmds):
			// Three commands as one group entry.
			entry, n := GroupCommands(cmds[i : i+3])
			if n < 2 {
				entry, n = cmds[i], 1
			}
			index++
			collect(h.f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: entry}))
			i += n
		case k == 3 && i+2 <= len(cmds):
			logs := make([]*raft.Log, 2)
			for j := range logs {
				index++
				logs[j] = &raft.Log{Index: index, Type: raft.LogCommand, Data: cmds[i+j]}
			}
			for _, v := range h.f.ApplyBatch(logs) {
				collect(v)
			}
			i += 2
		default:
			index++
			collect(h.f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: cmds[i]}))
			i++
		}
	}
	withRow := 0
	for i, a := range got {
		want, err := DecodeResult(a.EncodedResult())
		if err != nil {
			t.Fatalf("result %d: %v", i, err)
		}
		res, err := ResultOf(a, nil)
		if err != nil {
			t.Fatalf("result %d: ResultOf: %v", i, err)
		}
		if res != a.Result() || !proto.Equal(res, want) {
			t.Fatalf("result %d: message\n%v\nbytes decode to\n%v", i, res, want)
		}
		if res.GetReservation() != nil {
			withRow++
		}
	}
	if withRow < 40 {
		t.Fatalf("only %d of %d results carry a reservation: the stream tests too little", withRow, len(got))
	}
	// Anything else (a forwarded answer) is decoded from the bytes.
	enc := got[0].EncodedResult()
	if res, err := ResultOf(nil, enc); err != nil || !proto.Equal(res, got[0].Result()) {
		t.Fatalf("ResultOf(nil, bytes) = %v, %v", res, err)
	}
	if _, err := ResultOf(nil, []byte{0xff}); err == nil {
		t.Fatal("ResultOf decoded garbage")
	}
}
