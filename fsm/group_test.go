package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// stamped encodes cmd and stamps it with now, failing the test on error.
func stamped(t testing.TB, now int64, cmd *fsmv1.Command) []byte {
	t.Helper()
	b, err := Encode(cmd)
	if err != nil {
		t.Fatalf("encode %v: %v", cmd, err)
	}
	if b, err = Stamp(b, now); err != nil {
		t.Fatal(err)
	}
	return b
}

// groupCmd is the TYPE_GROUP command of the given encoded members.
func groupCmd(now int64, members ...[]byte) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_GROUP, NowMillis: now,
		Payload: &fsmv1.Command_Group{Group: &fsmv1.Group{Members: members}}}
}

// TestGroupFieldNumbers checks the field numbers the wire walks use
// against the schema.
func TestGroupFieldNumbers(t *testing.T) {
	cmd := (&fsmv1.Command{}).ProtoReflect().Descriptor().Fields()
	for name, want := range map[protoreflect.Name]protowire.Number{
		"type": typeField, "version": versionField, "now_millis": nowMillisField,
		"group": groupPayloadField, "request": requestField, "target": targetField, "modify": modifyField,
	} {
		if got := cmd.ByName(name).Number(); got != want {
			t.Errorf("Command.%s is field %d, the code uses %d", name, got, want)
		}
	}
	if got := (&fsmv1.Group{}).ProtoReflect().Descriptor().Fields().ByName("members").Number(); got != groupMembersField {
		t.Errorf("Group.members is field %d, the code uses %d", got, groupMembersField)
	}
	// scanMember takes every field from 10 on for a payload of the oneof.
	for i := range cmd.Len() {
		f := cmd.Get(i)
		if inOneof := f.ContainingOneof() != nil; inOneof != (f.Number() >= 10) {
			t.Errorf("Command.%s (field %d): payload fields are exactly the fields from 10 on", f.Name(), f.Number())
		}
	}
}

// TestGroupEncodingCanonical checks that GroupCommands writes what the
// deterministic encoder writes for the same group, so the entry decodes
// and re-encodes to the same bytes.
func TestGroupEncodingCanonical(t *testing.T) {
	for _, now := range []int64{0, 1, 5_000, 1 << 40} {
		ms := [][]byte{
			stamped(t, now, hold("a", "cpu", 1, 10, withKey("k1"))),
			stamped(t, now, commit("a")),
			stamped(t, now, reserve("", "cpu", 1, 10)),
			stamped(t, now, modify("a", []*fsmv1.Part{part("cpu", 2)}, nil, nil)),
		}
		got, n := GroupCommands(ms)
		if n != len(ms) {
			t.Fatalf("now %d: grouped %d of %d", now, n, len(ms))
		}
		want, err := Encode(groupCmd(now, ms...))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("now %d: GroupCommands wrote\n%x\nthe encoder writes\n%x", now, got, want)
		}
		dec, err := Decode(got)
		if err != nil {
			t.Fatal(err)
		}
		if dec.GetVersion() != versionGroup || dec.GetNowMillis() != now {
			t.Fatalf("decoded version %d now %d", dec.GetVersion(), dec.GetNowMillis())
		}
		members, err := DecodeGroup(dec)
		if err != nil || len(members) != len(ms) {
			t.Fatalf("DecodeGroup: %d members, %v", len(members), err)
		}
	}
}

// TestGroupCommandsSplits checks where the builder ends a group: at a
// command that must stay alone, a second ID from the index, another
// stamp, and the size caps.
func TestGroupCommandsSplits(t *testing.T) {
	const now = 7_000
	h := func(id string) []byte { return stamped(t, now, hold(id, "cpu", 1, 10)) }
	c := func(id string) []byte { return stamped(t, now, commit(id)) }
	big := func(id string) []byte {
		return stamped(t, now, hold(id, "cpu", 1, 10, func(c *fsmv1.Command) {
			c.GetRequest().Labels = map[string]string{"pad": string(bytes.Repeat([]byte{'x'}, MaxGroupBytes/3))}
		}))
	}
	many := make([][]byte, MaxGroupMembers+5)
	for i := range many {
		many[i] = c(fmt.Sprintf("r%d", i))
	}
	unitDown := stamped(t, now, &fsmv1.Command{Type: fsmv1.Command_TYPE_UNIT_DOWN, Owner: "ops",
		Payload: &fsmv1.Command_UnitDown{UnitDown: &fsmv1.UnitDown{Resource: "n", Unit: "u", FromMillis: 1, ToMillis: 2}}})
	for _, tc := range []struct {
		name string
		cmds [][]byte
		want int
	}{
		{"empty", nil, 0},
		{"one", [][]byte{h("a")}, 1},
		{"all", [][]byte{h("a"), c("a"), h("b"), c("b")}, 4},
		{"IDs from the index", [][]byte{h(""), c("a"), h(""), c("b"), h("")}, 5},
		{"tick first", [][]byte{stamped(t, now, tick()), h("a"), h("b")}, 1},
		{"tick inside", [][]byte{h("a"), h("b"), stamped(t, now, tick()), h("c")}, 2},
		{"unit down inside", [][]byte{h("a"), unitDown, h("b")}, 1},
		{"create resource", [][]byte{stamped(t, now, createRes("x", 1)), h("a")}, 1},
		{"other stamp", [][]byte{h("a"), h("b"), stamped(t, now+1, hold("c", "cpu", 1, 10))}, 2},
		{"unstamped", [][]byte{h("a"), stamped(t, 0, hold("c", "cpu", 1, 10))}, 1},
		{"a group", [][]byte{func() []byte { b, _ := GroupCommands([][]byte{h("a"), h("b")}); return b }(), h("c")}, 1},
		{"garbage", [][]byte{h("a"), {0xff, 0xff}}, 1},
		{"member cap", many, MaxGroupMembers},
		{"byte cap", [][]byte{big("a"), big("b"), big("c"), big("d")}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entry, n := GroupCommands(tc.cmds)
			if n != tc.want {
				t.Fatalf("grouped %d, want %d", n, tc.want)
			}
			if n < 2 {
				if entry != nil {
					t.Fatal("an entry for fewer than two")
				}
				return
			}
			dec, err := Decode(entry)
			if err != nil {
				t.Fatalf("the builder's group does not decode: %v", err)
			}
			if got := dec.GetGroup().GetMembers(); !slices.EqualFunc(got, tc.cmds[:n], bytes.Equal) {
				t.Fatal("members are not the commands' bytes in order")
			}
		})
	}
}

// TestDecodeGroupRefuses lists the groups no replica applies; Apply
// panics on each before it changes anything.
func TestDecodeGroupRefuses(t *testing.T) {
	const now = 7_000
	h := stamped(t, now, hold("a", "cpu", 1, 10))
	inner, _ := GroupCommands([][]byte{h, stamped(t, now, commit("a"))})
	for name, cmd := range map[string]*fsmv1.Command{
		"no members":     groupCmd(now),
		"bad member":     groupCmd(now, h, []byte{0xff, 0xff}),
		"unknown member": groupCmd(now, h, []byte{0x08, 0x63, 0x10, 0x01}),
		"nested":         groupCmd(now, h, inner),
		"tick member":    groupCmd(now, h, stamped(t, now, tick())),
		"create member":  groupCmd(now, h, stamped(t, now, createRes("x", 1))),
		"unit down": groupCmd(now, h, stamped(t, now, &fsmv1.Command{Type: fsmv1.Command_TYPE_UNIT_DOWN, Owner: "ops",
			Payload: &fsmv1.Command_UnitDown{UnitDown: &fsmv1.UnitDown{Resource: "n", Unit: "u", FromMillis: 1, ToMillis: 2}}})),
		"other stamp":    groupCmd(now, h, stamped(t, now+1, commit("a"))),
		"owner":          func() *fsmv1.Command { c := groupCmd(now, h); c.Owner = "alice"; return c }(),
		"key":            func() *fsmv1.Command { c := groupCmd(now, h); c.IdempotencyKey = "k"; return c }(),
		"privileged":     func() *fsmv1.Command { c := groupCmd(now, h); c.Privileged = true; return c }(),
		"version 4":      func() *fsmv1.Command { c := groupCmd(now, h); c.Version = 4; return c }(),
		"no payload":     {Type: fsmv1.Command_TYPE_GROUP, Version: versionGroup, NowMillis: now},
		"member version": groupCmd(now, h, []byte{0x08, 0x06, 0x10, 0x7f, 0x72, 0x00}),
	} {
		t.Run(name, func(t *testing.T) {
			if cmd.Version == 0 {
				cmd.Version = versionGroup
			}
			b, err := marshalOpts.Marshal(cmd)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode: %v, want ErrMalformed", err)
			}
			if _, err := Encode(cmd); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Encode: %v, want ErrMalformed", err)
			}
			m := fuzzBase(t)
			before := snapshotBytes(t, m)
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("Apply did not panic")
					}
				}()
				m.ApplyEntry(100, b)
			}()
			if after := snapshotBytes(t, m); !bytes.Equal(before, after) {
				t.Fatal("a refused group changed the state")
			}
		})
	}
}

// FuzzDecodeGroup feeds arbitrary members to the group decoder and the
// builder. Decode must never panic; a group it accepts must apply without
// panicking and answer once per member; and whenever every command is a
// well-formed stamped command, a group the builder makes must decode (a
// group no replica can apply would stop every one of them).
func FuzzDecodeGroup(f *testing.F) {
	const now = 7_000
	seed := func(cmds ...*fsmv1.Command) {
		var buf []byte
		for _, c := range cmds {
			b := stamped(f, now, c)
			buf = protowire.AppendBytes(buf, b)
		}
		f.Add(buf, true)
		f.Add(buf, false)
	}
	seed(hold("a", "cpu", 1, 10), commit("a"), reserve("", "gpu", 1, 10, withKey("k")))
	seed(hold("", "cpu", 1, 10), hold("", "cpu", 1, 10))
	seed(reserve("b", "cpu", 2, 10), modify("b", []*fsmv1.Part{part("cpu", 3)}, nil, nil), cancel("b"), abort("a"))
	seed(tick(), hold("a", "cpu", 1, 10))
	f.Add([]byte{0x02, 0xff, 0xff}, true)
	f.Fuzz(func(t *testing.T, data []byte, stampThem bool) {
		// data is a sequence of length-prefixed commands.
		var cmds [][]byte
		for len(data) > 0 && len(cmds) < 20 {
			b, n := protowire.ConsumeBytes(data)
			if n < 0 {
				break
			}
			cmds, data = append(cmds, b), data[n:]
		}
		gc := groupCmd(now, cmds...)
		gc.Version = versionGroup
		entry, err := marshalOpts.Marshal(gc)
		if err != nil {
			t.Fatal(err)
		}
		if dec, err := Decode(entry); err == nil {
			members, err := DecodeGroup(dec)
			if err != nil || len(members) != len(cmds) {
				t.Fatalf("Decode accepted a group DecodeGroup refuses: %v", err)
			}
			m := fuzzBase(t)
			outs := m.ApplyEntry(100, entry)
			if len(outs) != len(cmds) {
				t.Fatalf("%d results for %d members", len(outs), len(cmds))
			}
			for _, o := range outs {
				b, _ := o.([]byte)
				if _, err := DecodeResult(b); err != nil {
					t.Fatal(err)
				}
			}
			checkInvariants(t, m)
		}
		// The builder, given well-formed commands (what the leader
		// holds), must only build groups that decode.
		var good [][]byte
		for _, c := range cmds {
			if _, err := Decode(c); err != nil {
				continue
			}
			if stampThem {
				c, _ = Stamp(c, now)
			}
			good = append(good, c)
		}
		for rest := good; len(rest) > 0; {
			g, n := GroupCommands(rest)
			if n < 1 || n > len(rest) {
				t.Fatalf("GroupCommands took %d of %d", n, len(rest))
			}
			if n >= 2 {
				if _, err := Decode(g); err != nil {
					t.Fatalf("GroupCommands built a group that does not decode: %v", err)
				}
			}
			rest = rest[n:]
		}
	})
}

// groupGen makes random admissions for the group property test: a few
// client IDs so that commands meet the same rows (also within one
// group), some requests without an ID, repeated and reused idempotency
// keys, another owner, short hold TTLs so that holds expire at a group's
// time, and modifications of rows the same group creates.
type groupGen struct {
	r   *rand.Rand
	now int64
}

func (g *groupGen) id() string {
	return fmt.Sprintf("g%d", g.r.IntN(12))
}

func (g *groupGen) member() *fsmv1.Command {
	opts := []reqOpt{}
	if g.r.IntN(3) == 0 {
		opts = append(opts, withKey(fmt.Sprintf("k%d", g.r.IntN(15))))
	}
	if g.r.IntN(8) == 0 {
		opts = append(opts, withOwner("bob"))
	}
	var c *fsmv1.Command
	switch k := g.r.IntN(100); {
	case k < 30:
		id := g.id()
		if g.r.IntN(3) == 0 {
			id = "" // the ID comes from the index, as for every request of the public API
		}
		res := []string{"cpu", "gpu", "batch"}[g.r.IntN(3)]
		typ := fsmv1.Command_TYPE_HOLD
		if g.r.IntN(2) == 0 {
			typ = fsmv1.Command_TYPE_RESERVE
		}
		c = request(typ, id, res, int64(1+g.r.IntN(6)), int64(10+g.r.IntN(200)), opts...)
		if g.r.IntN(2) == 0 {
			c.GetRequest().StartMillis = proto.Int64(g.now + int64(g.r.IntN(300)))
		} else {
			c.GetRequest().NotBeforeMillis = g.now + int64(g.r.IntN(100))
		}
		if typ == fsmv1.Command_TYPE_HOLD {
			c.GetRequest().HoldTtlMillis = int64(20 + g.r.IntN(150))
		}
	case k < 50:
		c = commit(g.id(), opts...)
	case k < 60:
		c = abort(g.id(), opts...)
	case k < 75:
		c = cancel(g.id(), opts...)
	default:
		var start *int64
		if g.r.IntN(2) == 0 {
			start = proto.Int64(g.now + int64(g.r.IntN(300)))
		}
		c = modify(g.id(), []*fsmv1.Part{part("cpu", int64(1+g.r.IntN(5)))}, start, nil)
		for _, o := range opts {
			o(c)
		}
	}
	if c.IdempotencyKey != "" && g.r.IntN(4) == 0 {
		// A key reused for another request: refused from version 3 on.
		c.Fingerprint = bytes.Repeat([]byte{byte(g.r.IntN(3))}, 32)
	}
	if g.r.IntN(2) == 0 {
		c.Version = versionGroup // what the edge writes once every server runs this release
	}
	return c
}

// applyAlone applies the encoded command b to f as the lone entry at
// index, except that a reservation ID it takes from the index is
// GroupAutoID(index, autoN): the one thing besides the event sequence
// that a group numbers across its members.
func applyAlone(t testing.TB, f *FSM, index uint64, b []byte, autoN int) []byte {
	t.Helper()
	cmd, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.seq, f.st.autoN = 0, autoN
	res, enc := f.st.applyMember(index, cmd)
	if enc == nil {
		enc = encodeResult(res)
	}
	return enc
}

// renumber gives the events that f's member-by-member replay appended
// since it held n events the sequence numbers they have inside a group:
// the sequence continues from seq. It returns the next seq.
func renumber(f *FSM, n int, seq uint32) uint32 {
	for i := n; i < len(f.st.history); i++ {
		e := proto.CloneOf(f.st.history[i])
		e.Seq = seq
		seq++
		f.st.history[i] = e
	}
	return seq
}

var groupPropConfig = Config{DefaultHoldTTL: 100, MaxHoldTTL: 250, Retention: 300, IdempotencyWindow: 500,
	IdempotencyMaxKeys: 8, IdempotencyMinAge: 50, HistoryLimit: 1 << 20}

// TestGroupMatchesMembers is the property that makes grouping safe:
// random admissions applied (a) as group entries of random sizes and (b)
// member by member, each as a lone entry at the group's index and log
// time (with the event sequence continued and the IDs taken from the
// index numbered, the two things a group changes) give byte-identical
// results and events after every entry, and byte-identical snapshots
// (which hold the idempotency records) every few entries and at the end. Rerun one case with
// -fsm.seed=N.
func TestGroupMatchesMembers(t *testing.T) {
	for _, seed := range seeds() {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			g := &groupGen{r: rand.New(rand.NewPCG(seed, 0x6709)), now: 1_000}
			grouped, err := New(groupPropConfig)
			if err != nil {
				t.Fatal(err)
			}
			alone, err := New(groupPropConfig)
			if err != nil {
				t.Fatal(err)
			}
			index := uint64(0)
			lone := func(now int64, cmd *fsmv1.Command) {
				b := stamped(t, now, cmd)
				index++
				if a, b := grouped.ApplyCommand(index, b), alone.ApplyCommand(index, b); !bytes.Equal(a, b) {
					t.Fatalf("entry %d: results differ", index)
				}
			}
			lone(g.now, createRes("cpu", 16))
			lone(g.now, createRes("gpu", 4))
			lone(g.now, createPolicyRes("batch", 10, spec(MOVE, 0, 2)))
			lone(g.now, submitJob("job", "batch", 6, 100, 1_000))
			sizes, groups := map[int]int{}, 0
			for step := 0; step < *propSteps/2; step++ {
				g.now += int64(g.r.IntN(120))
				if g.r.IntN(10) == 0 {
					lone(g.now, tick())
					continue
				}
				k := 1 + g.r.IntN(10)
				cmds := make([][]byte, k)
				for i := range cmds {
					cmds[i] = stamped(t, g.now, g.member())
				}
				for rest := cmds; len(rest) > 0; {
					entry, n := GroupCommands(rest)
					members := rest[:n]
					rest = rest[n:]
					if n < 2 {
						entry = members[0]
					} else {
						groups++
						sizes[n]++
					}
					index++
					hist := len(grouped.st.history) // the same in both: the events so far were compared
					got := grouped.ApplyEntry(index, entry)
					if len(got) != n {
						t.Fatalf("entry %d: %d results for %d members", index, len(got), n)
					}
					var seq uint32
					autos := 0
					for i, m := range members {
						before := len(alone.st.history)
						want := applyAlone(t, alone, index, m, autos)
						if dec, _ := Decode(m); n >= 2 && takesAutoID(dec) {
							autos++
						}
						seq = renumber(alone, before, seq)
						if gb, _ := got[i].([]byte); !bytes.Equal(gb, want) {
							a, _ := DecodeResult(gb)
							b, _ := DecodeResult(want)
							t.Fatalf("entry %d member %d: grouped result\n%v\nalone\n%v", index, i, a, b)
						}
					}
					// The group's events are the members' events.
					gotEv, wantEv := grouped.st.history[hist:], alone.st.history[hist:]
					if !slices.EqualFunc(gotEv, wantEv, func(a, b *fsmv1.Event) bool { return proto.Equal(a, b) }) {
						t.Fatalf("entry %d: the group's %d events differ from its members' %d", index, len(gotEv), len(wantEv))
					}
					for i, e := range gotEv {
						if e.GetVersion() != index || e.GetSeq() != uint32(i) {
							t.Fatalf("entry %d: event %d is (%d, %d)", index, i, e.GetVersion(), e.GetSeq())
						}
					}
					// Snapshots (state and idempotency records) every few
					// entries and at the end: encoding them is what this
					// test spends its time on.
					if index%4 == 0 {
						sameSnapshots(t, index, grouped, alone)
					}
				}
			}
			sameSnapshots(t, index, grouped, alone)
			checkInvariants(t, grouped)
			// The test must have grouped something, big groups included.
			if groups < *propSteps/10 || sizes[2] == 0 || len(sizes) < 4 {
				t.Fatalf("only %d groups, sizes %v", groups, sizes)
			}
			st := grouped.Stats()
			t.Logf("%d groups, sizes %v; %d events", groups, sizes, st.HistoryLen)
		})
	}
}

// sameSnapshots fails unless a and b snapshot to the same bytes.
func sameSnapshots(t *testing.T, index uint64, a, b *FSM) {
	t.Helper()
	if sa, sb := snapshotBytes(t, a), snapshotBytes(t, b); !bytes.Equal(sa, sb) {
		t.Fatalf("after entry %d: snapshots differ", index)
	}
}

// groupGoldenCommands are the group entries 70_ to 79_ (envelope version
// 5), applied after 01_–25_. Their members are built here, stamped with
// the group's time.
func groupGoldenCommands(t testing.TB) []goldenEntry {
	m := func(now int64, c *fsmv1.Command) []byte { return stamped(t, now, c) }
	byBroker := func(c *fsmv1.Command) *fsmv1.Command { c.Owner = "broker-8"; return c }
	return []goldenEntry{
		// Created, committed and modified in one entry; one that does
		// not fit; an ID from the index.
		{"70_group.bin", 4_000, groupCmd(4_000,
			m(4_000, byBroker(hold("g-1", "cluster/cores", 8, 60_000, withStart(500_000), withTTL(10_000), withKey("g1")))),
			m(4_000, byBroker(reserve("", "cluster/cores", 4, 60_000, withWindow(600_000, 10_000_000), withKey("g2")))),
			m(4_000, byBroker(commit("g-1"))),
			m(4_000, byBroker(hold("g-2", "cluster/cores", 125, 60_000, withStart(500_000)))),
			m(4_000, byBroker(modify(AutoID(26), []*fsmv1.Part{part("cluster/cores", 6)}, ptr(int64(700_000)), nil))),
		)},
		// A retried key answered from its record (it still counts as
		// taking its ID from the index), a commit of the modification,
		// a second ID from the index (GroupAutoID(27, 1)), a short
		// hold, a cancel refused for its owner and the owner's own.
		{"71_group.bin", 4_100, groupCmd(4_100,
			m(4_100, byBroker(reserve("", "cluster/cores", 4, 60_000, withWindow(600_000, 10_000_000), withKey("g2")))),
			m(4_100, byBroker(commit(AutoID(26)))),
			m(4_100, byBroker(reserve("", "cluster/cores", 2, 60_000, withWindow(600_000, 10_000_000)))),
			m(4_100, byBroker(hold("g-3", "cluster/cores", 2, 60_000, withStart(800_000), withTTL(100), withKey("g3")))),
			m(4_100, cancel("g-1", withOwner("intruder"))),
			m(4_100, byBroker(cancel("g-1"))),
		)},
		// g-3's hold expires at the group's time, before the first
		// member; aborting it then fails; an abort of a live hold.
		{"72_group.bin", 4_500, groupCmd(4_500,
			m(4_500, byBroker(hold("g-4", "cluster/cores", 1, 1_000, withStart(900_000), withTTL(5_000)))),
			m(4_500, byBroker(abort("g-3"))),
			m(4_500, byBroker(abort("g-4"))),
		)},
	}
}

// groupGoldenStatuses are the member results of 70_–72_, in order.
var groupGoldenStatuses = []fsmv1.Result_Status{
	OK, OK, OK, REJECTED, OK,
	OK, OK, OK, OK, DENIED, OK,
	OK, CONFLICT, OK,
}

// TestGoldenGroupSnapshot pins the group entries and the snapshot after
// 01_–25_ and 70_–72_ (replayed at indexes 1–28).
func TestGoldenGroupSnapshot(t *testing.T) {
	entries := slices.Concat(goldenCommands()[:edgeGolden], groupGoldenCommands(t))
	statuses := slices.Concat(goldenStatuses[:edgeGolden], groupGoldenStatuses)
	g := goldenReplayOf(t, entries, statuses, "snapshot-v1-group.golden")
	for id, want := range map[string]fsmv1.Reservation_State{
		"g-1": CANCELLED, AutoID(26): COMMITTED, "g-3": EXPIRED, "g-4": ABORTED, GroupAutoID(27, 1): COMMITTED,
	} {
		if r, ok := g.Get(id); !ok || r.GetState() != want {
			t.Errorf("%s: %v, want %s", id, r.GetState(), want)
		}
	}
	if r, _ := g.Get(AutoID(26)); r.GetStartMillis() != 700_000 || r.GetParts()[0].GetAmount() != 6 {
		t.Errorf("%s after its modification: %v", AutoID(26), r)
	}
	// The events of one group entry are numbered across its members.
	evs := g.History(26, 0)
	var seqs []uint32
	for _, e := range evs {
		if e.GetVersion() == 26 {
			seqs = append(seqs, e.GetSeq())
		}
	}
	if len(seqs) < 4 || !slices.Equal(seqs, seqRange(len(seqs))) {
		t.Errorf("events of entry 26 have seqs %v, want 0, 1, 2, ...", seqs)
	}
}

func seqRange(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(i)
	}
	return out
}

// BenchmarkApplyGroup compares one replica's work for 64 one-phase
// reserves (IDs from the index, as the API makes them) applied as 64 log
// entries and as one group entry, each through one ApplyBatch as raft
// hands them over, and the leader's GroupCommands on them. ns/op is per
// batch of 64.
func BenchmarkApplyGroup(b *testing.B) {
	const size = 64
	batch := func(now int64, first int) [][]byte {
		out := make([][]byte, size)
		for i := range out {
			c := reserve("", "cpu", 1, 1_000, withWindow(now, now+100_000_000), withKey(fmt.Sprintf("k%d", first+i)))
			out[i] = stamped(b, now, c)
		}
		return out
	}
	setup := func(b *testing.B) *FSM {
		f, err := New(Config{})
		if err != nil {
			b.Fatal(err)
		}
		f.ApplyCommand(1, stamped(b, 1_000, createRes("cpu", 1<<40)))
		return f
	}
	for _, grouped := range []bool{false, true} {
		b.Run(fmt.Sprintf("members=%d/group=%t", size, grouped), func(b *testing.B) {
			f := setup(b)
			index, now, keys := uint64(1), int64(2_000), 0
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				cmds := batch(now, keys)
				keys += size
				if grouped {
					entry, _ := GroupCommands(cmds)
					cmds = [][]byte{entry}
				}
				// What raft hands the FSM: the entries of one
				// replication round in one ApplyBatch.
				logs := make([]*raft.Log, len(cmds))
				for i, c := range cmds {
					index++
					logs[i] = &raft.Log{Index: index, Type: raft.LogCommand, Data: c}
				}
				b.StartTimer()
				out := f.ApplyBatch(logs)
				b.StopTimer()
				if grouped {
					out = out[0].([]any)
				}
				for _, o := range out {
					if r, err := DecodeResult(o.(*Applied).EncodedResult()); err != nil || r.GetStatus() != OK || r.GetReplayed() {
						b.Fatalf("result %v, %v: every reserve must book", r, err)
					}
				}
				b.StartTimer()
				now++
			}
		})
	}
	b.Run(fmt.Sprintf("build/members=%d", size), func(b *testing.B) {
		cmds := batch(2_000, 0)
		b.ReportAllocs()
		for b.Loop() {
			if _, n := GroupCommands(cmds); n != size {
				b.Fatalf("grouped %d", n)
			}
		}
	})
}
