package replicated

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// fixedVersion is a Versioner with a set answer.
type fixedVersion uint32

func (v fixedVersion) CommonEnvelopeVersion() uint32 { return uint32(v) }

// innerTick is the ticker a RetentionTicker wraps: it answers a marker
// entry and a fixed due time.
type innerTick struct{}

var innerEntry = []byte("inner tick")

func (innerTick) Tick() []byte           { return innerEntry }
func (innerTick) NextDue() (int64, bool) { return 42, true }

// TestRetentionTickerWaitsForEveryServer: the configured retention is
// proposed only while it differs from the one in force and every server
// applies fsm.RetentionVersion; otherwise the wrapped ticker answers.
// Applying the proposed entry puts the value in force, after which the
// ticker proposes nothing more.
func TestRetentionTickerWaitsForEveryServer(t *testing.T) {
	f, err := fsm.New(fsm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.UnixMilli(t0) }
	def := fsm.Retention{Millis: fsm.DefaultRetention, IdempotencyMaxKeys: fsm.DefaultIdempotencyMaxKeys}
	want := fsm.Retention{Millis: 3_600_000, MaxEnded: 500, IdempotencyMaxKeys: 5_000}
	inner := func(tk *RetentionTicker, what string) {
		t.Helper()
		if at, ok := tk.NextDue(); at != 42 || !ok {
			t.Fatalf("%s: NextDue = %d, %v; want the wrapped ticker's", what, at, ok)
		}
		if b := tk.Tick(); !bytes.Equal(b, innerEntry) {
			t.Fatalf("%s: Tick proposed %q; want the wrapped ticker's entry", what, b)
		}
	}

	// The configuration asks for what is in force already: nothing to do.
	same := NewRetentionTicker(f, def, innerTick{}, now, nil)
	same.SetVersioner(fixedVersion(fsm.CurrentVersion))
	inner(same, "default configured")

	tk := NewRetentionTicker(f, want, innerTick{}, now, nil)
	inner(tk, "no cluster view yet")
	for v := uint32(1); v < fsm.RetentionVersion; v++ {
		tk.SetVersioner(fixedVersion(v))
		inner(tk, fmt.Sprintf("a server applies only version %d", v))
	}

	tk.SetVersioner(fixedVersion(fsm.RetentionVersion))
	if at, ok := tk.NextDue(); at != t0 || !ok {
		t.Fatalf("NextDue = %d, %v; want due now (%d)", at, ok, t0)
	}
	b := tk.Tick()
	cmd, err := fsm.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.GetType() != fsmv1.Command_TYPE_SET_RETENTION || cmd.GetVersion() != fsm.RetentionVersion ||
		cmd.GetSetRetention().GetRetentionMillis() != want.Millis || cmd.GetSetRetention().GetMaxEnded() != want.MaxEnded ||
		cmd.GetSetRetention().GetIdempotencyMaxKeys() != want.IdempotencyMaxKeys {
		t.Fatalf("Tick proposed %v", cmd)
	}
	stamped, err := fsm.Stamp(b, t0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := fsm.DecodeResult(f.ApplyCommand(1, stamped))
	if err != nil || res.GetStatus() != fsmv1.Result_STATUS_OK {
		t.Fatalf("applying the proposed entry: %v %v", res, err)
	}
	if got := f.Retention(); got != (fsm.Retention{Millis: want.Millis, MaxEnded: want.MaxEnded, IdempotencyMaxKeys: want.IdempotencyMaxKeys,
		Set: true, IdempotencyMaxKeysSet: true}) {
		t.Fatalf("Retention after the entry = %+v", got)
	}
	inner(tk, "in force")
}

// TestRetentionTickerWritesAConfiguredKeyCap: a cap on idempotency keys
// configured away from the default goes into the log even when this
// replica uses it already (its own configuration), since other servers
// may be configured otherwise and would forget other keys; the default
// cap alone writes nothing.
func TestRetentionTickerWritesAConfiguredKeyCap(t *testing.T) {
	f, err := fsm.New(fsm.Config{IdempotencyMaxKeys: 1_000})
	if err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.UnixMilli(t0) }
	want := fsm.Retention{Millis: fsm.DefaultRetention, IdempotencyMaxKeys: 1_000}
	if got := f.Retention(); got.IdempotencyMaxKeys != 1_000 || got.IdempotencyMaxKeysSet {
		t.Fatalf("Retention before any entry = %+v", got)
	}
	tk := NewRetentionTicker(f, want, innerTick{}, now, nil)
	tk.SetVersioner(fixedVersion(fsm.RetentionVersion))
	b := tk.Tick()
	if bytes.Equal(b, innerEntry) {
		t.Fatal("a configured cap already used locally was not put into the log")
	}
	stamped, err := fsm.Stamp(b, t0)
	if err != nil {
		t.Fatal(err)
	}
	f.ApplyCommand(1, stamped)
	if got := f.Retention(); !got.IdempotencyMaxKeysSet || got.IdempotencyMaxKeys != 1_000 {
		t.Fatalf("Retention after the entry = %+v", got)
	}
	if b := tk.Tick(); !bytes.Equal(b, innerEntry) {
		t.Fatalf("proposed again once in force: %q", b)
	}

	g, err := fsm.New(fsm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	plain := NewRetentionTicker(g, fsm.Retention{Millis: fsm.DefaultRetention, IdempotencyMaxKeys: fsm.DefaultIdempotencyMaxKeys}, innerTick{}, now, nil)
	plain.SetVersioner(fixedVersion(fsm.RetentionVersion))
	if b := plain.Tick(); !bytes.Equal(b, innerEntry) {
		t.Fatalf("the default configuration proposed %q", b)
	}
}

// TestCheckRetention names the setting a bad value belongs to.
func TestCheckRetention(t *testing.T) {
	for _, tc := range []struct {
		r    fsm.Retention
		want string
	}{
		{fsm.Retention{Millis: 0, IdempotencyMaxKeys: 1}, "ended_retention"},
		{fsm.Retention{Millis: fsm.MaxRetentionMillis + 1, IdempotencyMaxKeys: 1}, "ended_retention"},
		{fsm.Retention{Millis: 1, MaxEnded: -1, IdempotencyMaxKeys: 1}, "ended_max"},
		{fsm.Retention{Millis: 1, IdempotencyMaxKeys: 0}, "idempotency_max_keys"},
		{fsm.Retention{Millis: 1, IdempotencyMaxKeys: fsm.MaxIdempotencyMaxKeys + 1}, "idempotency_max_keys"},
		{fsm.Retention{Millis: fsm.MaxRetentionMillis, MaxEnded: 0, IdempotencyMaxKeys: fsm.MaxIdempotencyMaxKeys}, ""},
	} {
		err := CheckRetention(tc.r)
		if (tc.want == "") != (err == nil) || err != nil && !strings.HasPrefix(err.Error(), tc.want+":") {
			t.Errorf("CheckRetention(%+v) = %v, want %q", tc.r, err, tc.want)
		}
	}
}
