package fsm

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// randCommand returns a random command of a type decodeCommandFast reads
// (sometimes a group of them), every field set sometimes.
func randCommand(rng *rand.Rand, depth int) *fsmv1.Command {
	str := func() string {
		return []string{"", "a", "job-1", "é☃", "k/ey:1"}[rng.IntN(5)]
	}
	i64 := func() int64 {
		return []int64{0, 1, -1, 1 << 40, -1 << 62}[rng.IntN(5)]
	}
	parts := func() []*fsmv1.Part {
		var ps []*fsmv1.Part
		for range rng.IntN(3) {
			p := &fsmv1.Part{Resource: str(), Amount: i64()}
			for range rng.IntN(2) {
				p.Units = append(p.Units, str())
			}
			ps = append(ps, p)
		}
		return ps
	}
	opt := func() *int64 {
		if rng.IntN(2) == 0 {
			return nil
		}
		v := i64()
		return &v
	}
	c := &fsmv1.Command{
		Type:           fsmv1.Command_Type(rng.IntN(40)),
		Version:        uint32(rng.IntN(7)),
		NowMillis:      i64(),
		IdempotencyKey: str(),
		Owner:          str(),
		Privileged:     rng.IntN(4) == 0,
	}
	if rng.IntN(3) == 0 {
		c.Fingerprint = []byte(str())
	}
	switch rng.IntN(5) {
	case 0:
		r := &fsmv1.ReservationRequest{Id: str(), Parts: parts(), DurationMillis: i64(), NotBeforeMillis: i64(),
			DeadlineMillis: i64(), StartMillis: opt(), HoldTtlMillis: i64()}
		if rng.IntN(3) == 0 {
			r.Labels = map[string]string{str(): str(), str(): str()}
		}
		c.Payload = &fsmv1.Command_Request{Request: r}
	case 1:
		c.Payload = &fsmv1.Command_Target{Target: &fsmv1.Target{Id: str()}}
	case 2:
		c.Payload = &fsmv1.Command_Modify{Modify: &fsmv1.Modify{Id: str(), Parts: parts(), StartMillis: opt(), EndMillis: opt(),
			HoldTtlMillis: i64(), WindowDurationMillis: i64(), NotBeforeMillis: i64(), DeadlineMillis: i64()}}
	case 3:
		if depth == 0 {
			g := &fsmv1.Group{}
			for range rng.IntN(4) {
				m, _ := marshalOpts.Marshal(randCommand(rng, 1))
				g.Members = append(g.Members, m)
			}
			c.Payload = &fsmv1.Command_Group{Group: g}
		}
	case 4:
		// A payload the fast decoder leaves to the generic one.
		c.Payload = &fsmv1.Command_Expire{Expire: &fsmv1.Expire{}}
	}
	return c
}

// checkCommandDecode holds decodeCommandFast to proto.Unmarshal on b.
func checkCommandDecode(t *testing.T, b []byte) {
	t.Helper()
	ref := new(fsmv1.Command)
	refErr := proto.Unmarshal(b, ref)
	got, ok := decodeCommandFast(b)
	if !ok {
		return
	}
	if refErr != nil {
		t.Fatalf("decodeCommandFast accepted %x, which the generic decoder refuses: %v", b, refErr)
	}
	if !proto.Equal(got, ref) {
		t.Fatalf("decodeCommandFast read\n%v\nthe generic decoder\n%v\nfrom %x", got, ref, b)
	}
	for i, m := range got.GetGroup().GetMembers() {
		if cap(m) != len(m) {
			t.Fatalf("member %d shares its backing array beyond its length", i)
		}
	}
}

func TestCommandDecodeMatchesProto(t *testing.T) {
	seed := *rowSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -fsm.rowseed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 13))
	fast := 0
	for range 20_000 {
		c := randCommand(rng, 0)
		b, err := marshalOpts.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		checkCommandDecode(t, b)
		if _, ok := decodeCommandFast(b); ok {
			fast++
		}
	}
	if fast < 10_000 {
		t.Fatalf("the fast decoder read only %d of 20,000 commands of its types", fast)
	}
	// Every stored golden entry decodes the same both ways.
	files, err := filepath.Glob("testdata/commands/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("golden commands: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkCommandDecode(t, b)
	}
}

// TestCommandDecodeFallback: what the generic decoder merges, replaces or
// keeps as unknown is left to it.
func TestCommandDecodeFallback(t *testing.T) {
	target := func(id string) []byte {
		b := protowire.AppendTag(nil, targetField, protowire.BytesType)
		inner := protowire.AppendTag(nil, 1, protowire.BytesType)
		inner = protowire.AppendString(inner, id)
		return protowire.AppendBytes(b, inner)
	}
	envelope := []byte{0x08, 0x06, 0x10, 0x01} // type COMMIT, version 1
	for name, b := range map[string][]byte{
		"two payloads":     slices.Concat(envelope, target("a"), target("b")),
		"repeated type":    slices.Concat(envelope, []byte{0x08, 0x07}, target("a")),
		"unknown field":    slices.Concat(envelope, target("a"), []byte{0xf8, 0x07, 0x01}),
		"other payload":    slices.Concat(envelope, []byte{0x8a, 0x01, 0x00}), // field 17
		"bad utf-8 owner":  slices.Concat(envelope, []byte{0x2a, 0x01, 0xff}, target("a")),
		"fixed32 on type":  slices.Concat([]byte{0x0d, 1, 0, 0, 0}, target("a")),
		"group with field": slices.Concat(envelope, []byte{0xe2, 0x03, 0x02, 0x10, 0x01}),
	} {
		t.Run(name, func(t *testing.T) {
			if _, ok := decodeCommandFast(b); ok {
				t.Fatalf("decodeCommandFast accepted %x", b)
			}
			checkCommandDecode(t, b)
		})
	}
}

// FuzzCommandDecode: whatever the fast decoder accepts, the generic one
// decodes to an equal command.
func FuzzCommandDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 16 {
		if b, err := marshalOpts.Marshal(randCommand(rng, 0)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkCommandDecode(t, b) })
}

// TestCommandCodecCoversSchema fails when a message decodeCommandFast
// reads gains a field (for Command, an envelope field below the
// payloads): the fast decoder would refuse it and fall back, which is
// correct but slow, or, for a field it reads, must learn it.
func TestCommandCodecCoversSchema(t *testing.T) {
	for _, tc := range []struct {
		msg   proto.Message
		below protoreflect.FieldNumber
		want  []protoreflect.FieldNumber
	}{
		{&fsmv1.Command{}, 10, []protoreflect.FieldNumber{1, 2, 3, 4, 5, 6, 7}},
		{&fsmv1.ReservationRequest{}, 1000, []protoreflect.FieldNumber{1, 2, 3, 4, 5, 6, 7, 8}},
		{&fsmv1.Target{}, 1000, []protoreflect.FieldNumber{1}},
		{&fsmv1.Modify{}, 1000, []protoreflect.FieldNumber{1, 2, 3, 4, 5, 6, 7, 8}},
		{&fsmv1.Group{}, 1000, []protoreflect.FieldNumber{1}},
		{&fsmv1.Part{}, 1000, []protoreflect.FieldNumber{1, 2, 40}},
	} {
		fields := tc.msg.ProtoReflect().Descriptor().Fields()
		var got []protoreflect.FieldNumber
		for i := range fields.Len() {
			if n := fields.Get(i).Number(); n < tc.below {
				got = append(got, n)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s has fields %v; cmdcodec.go knows %v: teach it the change",
				tc.msg.ProtoReflect().Descriptor().FullName(), got, tc.want)
		}
	}
	for num, name := range map[protowire.Number]string{requestField: "request", targetField: "target", modifyField: "modify", groupPayloadField: "group"} {
		if f := (&fsmv1.Command{}).ProtoReflect().Descriptor().Fields().ByName(protoreflect.Name(name)); f == nil || f.Number() != num {
			t.Errorf("Command.%s is %v, cmdcodec.go assumes field %d", name, f, num)
		}
	}
}
