package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// stampReference is Stamp as it was before it stopped decoding: decode
// (refusing what Decode refuses), set now_millis, encode again. It is the
// reference the splicing Stamp is checked against.
func stampReference(cmd []byte, nowMillis int64) ([]byte, error) {
	c, err := Decode(cmd)
	if err != nil {
		return nil, fmt.Errorf("stamp: %w", err)
	}
	c.NowMillis = nowMillis
	b, err := marshalOpts.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("stamp: %w", err)
	}
	return b, nil
}

// stampTimes are the clock values the stamp tests use: zero (omitted by
// the encoder), negative (ten-byte varints), the extremes, and ordinary
// Unix milliseconds.
var stampTimes = []int64{0, 1, -1, 127, 128, 1_000, 1_700_000_000_000, math.MaxInt64, math.MinInt64}

func TestNowMillisField(t *testing.T) {
	fd := (&fsmv1.Command{}).ProtoReflect().Descriptor().Fields().ByName("now_millis")
	if fd == nil || fd.Number() != nowMillisField || fd.Kind().String() != "int64" || fd.HasPresence() {
		t.Fatalf("now_millis is %v; Stamp assumes field %d, a proto3 int64 without presence", fd, nowMillisField)
	}
}

// commandType is the type StampType reports for b, and whether it
// accepted b.
func commandType(b []byte) (fsmv1.Command_Type, bool) {
	_, typ, err := StampType(b, 1_000)
	return typ, err == nil
}

// checkStampType asserts StampType's contract on the type for one input:
// it never panics, and wherever Decode accepts the bytes it reports their
// type.
func checkStampType(t testing.TB, b []byte) {
	t.Helper()
	got, ok := commandType(b)
	c, err := Decode(b)
	if err != nil {
		return
	}
	if !ok || got != c.GetType() {
		t.Fatalf("StampType(%x) type %v, accepted %v; Decode reads %v", b, got, ok, c.GetType())
	}
}

// TestStampType: on every golden and generated command, canonical and
// scrambled (fields reordered, a stale type field first), StampType
// reads the type Decode reads; a command cut inside a field is refused.
func TestStampType(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	types := map[fsmv1.Command_Type]bool{}
	for _, b := range unstampedCorpus(t) {
		checkStampType(t, b)
		s := scramble(t, r, b, 5)
		// A stale type field first: the decoder lets the last one win.
		stale := protowire.AppendVarint(protowire.AppendTag(nil, typeField, protowire.VarintType), uint64(fsmv1.Command_TYPE_EXPIRE))
		checkStampType(t, append(stale, s...))
		typ, _ := commandType(b)
		types[typ] = true
		// Cut inside the last field: the framing is broken, and
		// StampType must say so rather than read a partial value.
		fs := fields(t, b)
		last := fs[len(fs)-1]
		if len(last) > 1 {
			if _, ok := commandType(b[:len(b)-1]); ok {
				t.Fatalf("StampType accepts %x, a command cut inside its last field", b[:len(b)-1])
			}
		}
	}
	if !types[fsmv1.Command_TYPE_CREATE_SERIES] || !types[fsmv1.Command_TYPE_CANCEL_SERIES] || !types[fsmv1.Command_TYPE_HOLD] {
		t.Fatalf("the corpus lacks series or hold commands: %v", types)
	}
}

// FuzzStampType: StampType never panics and reads the type Decode reads.
func FuzzStampType(f *testing.F) {
	for i, b := range unstampedCorpus(f) {
		if i%5 == 0 {
			f.Add(b)
		}
	}
	f.Add([]byte{0x08})
	f.Add([]byte{0x08, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) { checkStampType(t, b) })
}

// unstampedCorpus returns encoded, unstamped commands: every golden
// command and a few generated streams (every type, valid and invalid
// fields, idempotency keys, labels, policies).
func unstampedCorpus(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	for _, g := range goldenCommands() {
		b, err := Encode(g.cmd)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	for seed := range uint64(4) {
		g := &gen{r: rand.New(rand.NewPCG(seed, 0x57a9)), now: 1_000}
		for range 150 {
			b, err := Encode(g.command())
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
	}
	return append(out, TickCommand())
}

// fields splits an encoded message into its top-level fields.
func fields(t testing.TB, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			t.Fatalf("bad field %d: %v", num, protowire.ParseError(m))
		}
		out = append(out, b[:n+m])
		b = b[n+m:]
	}
	return out
}

// scramble returns a non-canonical encoding that Decode reads as cmd with
// now_millis = old: the top-level fields in a random order, earlier
// now_millis values scattered among them (the last one, old, wins) and an
// unknown field. Forwarded bytes need not come from our encoder.
func scramble(t testing.TB, r *rand.Rand, cmd []byte, old int64) []byte {
	t.Helper()
	fs := fields(t, cmd)
	for range r.IntN(3) {
		fs = append(fs, protowire.AppendVarint(protowire.AppendTag(nil, nowMillisField, protowire.VarintType), r.Uint64()))
	}
	fs = append(fs, protowire.AppendBytes(protowire.AppendTag(nil, 999, protowire.BytesType), []byte("x")))
	r.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
	fs = append(fs, protowire.AppendVarint(protowire.AppendTag(nil, nowMillisField, protowire.VarintType), uint64(old)))
	return bytes.Join(fs, nil)
}

// checkStampAgrees asserts the Stamp contract for one input: Stamp never
// panics; where the reference refuses, the stamped bytes do not decode
// either; where it accepts, Stamp's output decodes to the same command,
// and for the canonical encoding of that command it is the very same
// bytes.
func checkStampAgrees(t testing.TB, cmd []byte, now int64) (got, want []byte) {
	t.Helper()
	got, gerr := Stamp(cmd, now)
	want, werr := stampReference(cmd, now)
	if werr != nil {
		if gerr == nil {
			if _, err := Decode(got); err == nil {
				t.Fatalf("reference refuses %x (%v), but Stamp made bytes that decode", cmd, werr)
			}
		} else if !errors.Is(gerr, ErrMalformed) {
			t.Fatalf("Stamp error %v does not wrap ErrMalformed", gerr)
		}
		return nil, nil
	}
	if gerr != nil {
		t.Fatalf("Stamp refuses %x, which Decode accepts: %v", cmd, gerr)
	}
	dg, err := Decode(got)
	if err != nil {
		t.Fatalf("stamped %x does not decode: %v", got, err)
	}
	dw, err := Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(dg, dw) || dg.GetNowMillis() != now {
		t.Fatalf("Stamp(%x, %d) decodes to\n%v\nthe reference to\n%v", cmd, now, dg, dw)
	}
	canon, err := Encode(dw)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := Stamp(canon, now); err != nil || !bytes.Equal(again, want) {
		t.Fatalf("Stamp of the canonical encoding = %x, %v; reference %x", again, err, want)
	}
	return got, want
}

// TestStampMatchesReference checks Stamp against the decode-and-encode
// reference on every golden entry and generated commands, in canonical
// and scrambled encodings and at every clock value of stampTimes, and
// that it does not modify its input.
func TestStampMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, b := range unstampedCorpus(t) {
		orig := bytes.Clone(b)
		for _, now := range stampTimes {
			got, want := checkStampAgrees(t, b, now)
			if !bytes.Equal(got, want) {
				t.Fatalf("Stamp(%x, %d) = %x, reference %x: the log format changed", b, now, got, want)
			}
			// Restamping replaces the stamp.
			got2, want2 := checkStampAgrees(t, got, now/2)
			if !bytes.Equal(got2, want2) {
				t.Fatalf("restamp of %x: %x, reference %x", got, got2, want2)
			}
			checkStampAgrees(t, scramble(t, r, b, r.Int64()), now)
		}
		if !bytes.Equal(b, orig) {
			t.Fatal("Stamp modified its input")
		}
	}
}

// TestStampGoldenEntries restamps the stored golden entries (stamped log
// entries as written by earlier releases): with their own time Stamp
// gives back the very bytes, and with any other it agrees with the
// reference byte for byte.
func TestStampGoldenEntries(t *testing.T) {
	for _, g := range goldenCommands() {
		stored, err := os.ReadFile(filepath.Join("testdata", "commands", g.file))
		if err != nil {
			t.Fatal(err)
		}
		if again, err := Stamp(stored, g.now); err != nil || !bytes.Equal(again, stored) {
			t.Fatalf("%s restamped with its own time: %x, %v; stored %x", g.file, again, err, stored)
		}
		for _, now := range stampTimes {
			if got, want := checkStampAgrees(t, stored, now); !bytes.Equal(got, want) {
				t.Fatalf("%s at %d: %x, reference %x", g.file, now, got, want)
			}
		}
	}
}

// TestStampedStreamsApplyIdentically applies generated streams stamped by
// Stamp to one replica and stamped by the reference to another (scrambled
// encodings included): every result and the final snapshots must be
// byte-identical.
func TestStampedStreamsApplyIdentically(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			g := &gen{r: rand.New(rand.NewPCG(seed, 0x1ed9e4)), now: 1_000}
			r := rand.New(rand.NewPCG(seed, 1))
			a, b := newHarness(t, propConfig), newHarness(t, propConfig)
			for i := range 300 {
				cmd := g.command()
				if i < len(genResources) {
					cmd = createRes(genResources[i], 16)
				}
				enc, err := Encode(cmd)
				if err != nil {
					t.Fatal(err)
				}
				if i%3 == 0 {
					enc = scramble(t, r, enc, r.Int64())
				}
				sa, err := Stamp(enc, g.now)
				if err != nil {
					t.Fatal(err)
				}
				sb, err := stampReference(enc, g.now)
				if err != nil {
					t.Fatal(err)
				}
				ra, rb := a.f.ApplyCommand(uint64(i+1), sa), b.f.ApplyCommand(uint64(i+1), sb)
				if !bytes.Equal(ra, rb) {
					t.Fatalf("step %d: results differ", i)
				}
				if res, err := DecodeResult(ra); err == nil {
					g.ids = append(g.ids, resultIDs(res)...)
				}
			}
			if !bytes.Equal(snapshotBytes(t, a.f), snapshotBytes(t, b.f)) {
				t.Fatal("snapshots differ")
			}
		})
	}
}

// TestStampRefusesBrokenFraming: bytes that are not a sequence of complete
// fields are refused with ErrMalformed, never stamped, so a stamp cannot
// end up inside a truncated field.
func TestStampRefusesBrokenFraming(t *testing.T) {
	hold, err := os.ReadFile(filepath.Join("testdata", "commands", "04_hold.bin"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"truncated payload": hold[:len(hold)-3],
		"truncated tag":     {0x80},
		"bad varint":        bytes.Repeat([]byte{0xff}, 11),
		"field zero":        {0x00, 0x01},
		"open group":        {0x0b},
		"end group":         {0x0c},
		"truncated stamp":   {0x08, 0x04, 0x18, 0x80},
		"length past end":   {0x08, 0x04, 0x22, 0x05, 'a'},
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if out, err := Stamp(b, 5); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Stamp(%x) = %x, %v; want ErrMalformed", b, out, err)
			}
		})
	}
	// The empty input is a sequence of no fields: Stamp writes only the
	// stamp, which Decode refuses (no type), as it refuses the input.
	if out, err := Stamp(nil, 5); err != nil || !bytes.Equal(out, []byte{0x18, 0x05}) {
		t.Fatalf("Stamp(nil) = %x, %v", out, err)
	}
}

// FuzzStamp checks the Stamp contract (checkStampAgrees) on arbitrary
// bytes and clock values, and that the two stamps of an accepted command
// apply to byte-identical results and state.
func FuzzStamp(f *testing.F) {
	for i, b := range unstampedCorpus(f) {
		if i%7 == 0 || i < len(goldenCommands()) {
			f.Add(b, stampTimes[i%len(stampTimes)])
		}
	}
	for i, g := range goldenCommands() {
		if b, err := os.ReadFile(filepath.Join("testdata", "commands", g.file)); err == nil {
			f.Add(b, stampTimes[(i+3)%len(stampTimes)])
		}
	}
	f.Add([]byte{}, int64(0))
	f.Add([]byte{0x08, 0x0a, 0x10, 0x01, 0x18, 0x05, 0x82, 0x01, 0x00, 0x18, 0x07}, int64(-3))
	f.Fuzz(func(t *testing.T, data []byte, now int64) {
		got, want := checkStampAgrees(t, data, now)
		if want == nil {
			return
		}
		a, b := fuzzBase(t), fuzzBase(t)
		if ra, rb := a.ApplyCommand(100, got), b.ApplyCommand(100, want); !bytes.Equal(ra, rb) {
			t.Fatal("results differ")
		}
		if !bytes.Equal(snapshotBytes(t, a), snapshotBytes(t, b)) {
			t.Fatal("states differ")
		}
	})
}

// BenchmarkStamp compares Stamp with the decode-and-encode reference it
// replaced, on a keyed hold with labels (a typical write) and on the
// tick. Compare with: benchstat -col /impl.
func BenchmarkStamp(b *testing.B) {
	holdCmd := hold("job-1", "cpu", 4, 3_600_000, withWindow(1_000, 0), withKey("k-123"))
	holdCmd.GetRequest().Labels = map[string]string{"team": "physics", "queue": "batch"}
	enc, err := Encode(holdCmd)
	if err != nil {
		b.Fatal(err)
	}
	impls := []struct {
		name  string
		stamp func([]byte, int64) ([]byte, error)
	}{{"reference", stampReference}, {"splice", Stamp}}
	for _, c := range []struct {
		name string
		cmd  []byte
	}{{"hold", enc}, {"tick", TickCommand()}} {
		for _, im := range impls {
			b.Run(fmt.Sprintf("cmd=%s/impl=%s", c.name, im.name), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(c.cmd)))
				for b.Loop() {
					if _, err := im.stamp(c.cmd, 1_700_000_000_000); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
