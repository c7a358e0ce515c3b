package series

import (
	"encoding/hex"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/spec-v1.hex")

// goldenSpec is the spec encoded in testdata/spec-v1.hex.
var goldenSpec = Spec{
	Rule:      "FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9",
	Zone:      "Europe/Berlin",
	Start:     "20261130T000000",
	NotBefore: 1_796_036_400_000,
	Duration:  3_600_000,
	Horizon:   7_776_000_000,
}

// TestEncodingV1Golden is the upgrade test: the version-1 bytes a release
// wrote must keep decoding to the same spec, and Encode must keep writing
// them. Re-record only for a new version: go test ./series -run Golden -update.
func TestEncodingV1Golden(t *testing.T) {
	path := filepath.Join("testdata", "spec-v1.hex")
	if *update {
		if err := os.WriteFile(path, []byte(hex.EncodeToString(goldenSpec.Encode())+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode(golden): %v", err)
	}
	if got != goldenSpec {
		t.Fatalf("Decode(golden) = %+v, want %+v", got, goldenSpec)
	}
	if enc := goldenSpec.Encode(); string(enc) != string(b) {
		t.Fatalf("Encode changed the version-1 bytes:\n got %x\nwant %x", enc, b)
	}
}

// TestEncodeRoundTripsParsedSpecs: whatever Parse accepts, Encode/Decode
// give back unchanged, and it compiles again to the same occurrences.
func TestEncodeRoundTripsParsedSpecs(t *testing.T) {
	for _, in := range []Input{
		{Repeat: "FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9;COUNT=20", TZ: "Europe/Berlin", Start: 1_796_000_000_000, Duration: 3_600_000},
		{Repeat: "rrule:freq=monthly;bymonthday=-1;byhour=18", TZ: "America/New_York", Start: 1_796_000_000_000, NotBefore: 1_796_000_100_000, Duration: 7_200_000, Horizon: 86_400_000 * 30},
		{Repeat: "FREQ=DAILY;UNTIL=20270101;BYHOUR=6,18", TZ: "UTC", Start: 1_796_000_000_000, Duration: 60_000},
	} {
		s, err := Parse(in, DefaultLimits())
		if err != nil {
			t.Fatalf("Parse(%+v): %v", in, err)
		}
		spec, err := Decode(s.Spec().Encode())
		if err != nil || spec != s.Spec() {
			t.Fatalf("round trip of %+v: %+v, %v", s.Spec(), spec, err)
		}
		again := mustCompile(t, spec)
		if a, b := s.Expand(0, maxInt64/2), again.Expand(0, maxInt64/2); !equalInt64s(a, b) {
			t.Fatalf("recompiled spec expands differently")
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	good := goldenSpec.Encode()
	bad := map[string][]byte{
		"empty":         nil,
		"version 2":     append([]byte{2}, good[1:]...),
		"truncated":     good[:len(good)-1],
		"trailing":      append(append([]byte{}, good...), 0),
		"huge length":   {1, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"not canonical": Spec{Rule: "BYHOUR=9;FREQ=DAILY", Zone: "UTC", Start: "20260101T000000", Duration: 1, Horizon: 1}.Encode(),
		"no horizon":    Spec{Rule: "FREQ=DAILY", Zone: "UTC", Start: "20260101T000000", Duration: 1}.Encode(),
		"bad start":     Spec{Rule: "FREQ=DAILY", Zone: "UTC", Start: "20260230T000000", Duration: 1, Horizon: 1}.Encode(),
		"local zone":    Spec{Rule: "FREQ=DAILY", Zone: "Local", Start: "20260101T000000", Duration: 1, Horizon: 1}.Encode(),
	}
	for name, b := range bad {
		_, err := Decode(b)
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: Decode = %v, want a *FieldError", name, err)
		}
	}
}

// FuzzDecode: arbitrary bytes never panic; what decodes encodes back to
// the same bytes (the encoding is canonical).
func FuzzDecode(f *testing.F) {
	f.Add(goldenSpec.Encode())
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("Decode error %v does not name a field", err)
			}
			return
		}
		if string(s.Encode()) != string(b) {
			t.Fatalf("decoded %+v re-encodes differently", s)
		}
	})
}
