package replicated

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// fakeLog applies every command to its FSM at once, stamped with a fixed
// clock (by stamp, the leader's stamp, when set; else fsm.Stamp), and
// records what it was given. common, when set, is the envelope version
// every server applies (the log then implements Versioner).
type fakeLog struct {
	mu    sync.Mutex
	f     *fsm.FSM
	now   int64
	index uint64
	cmds  []*fsmv1.Command
	stamp func(cmd []byte, nowMillis int64) ([]byte, error)
}

func (l *fakeLog) Apply(_ context.Context, b []byte) ([]byte, error) {
	cmd, err := fsm.Decode(b)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cmds = append(l.cmds, cmd)
	stamp := fsm.Stamp
	if l.stamp != nil {
		stamp = l.stamp
	}
	stamped, err := stamp(b, l.now)
	if err != nil {
		return nil, err
	}
	l.index++
	return l.f.ApplyCommand(l.index, stamped), nil
}

func (l *fakeLog) ReadBarrier(context.Context) error { return nil }

// versionedLog is a fakeLog whose cluster applies up to common.
type versionedLog struct {
	*fakeLog
	common uint32
}

func (l *versionedLog) CommonEnvelopeVersion() uint32 { return l.common }

const t0 = 1_800_000_000_000 // 2027-01-15

func newFake(t *testing.T) *fakeLog {
	t.Helper()
	f, err := fsm.New(fsm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return &fakeLog{f: f, now: t0}
}

var keys atomic.Int64

// op is an operator's write with a fresh idempotency key.
func op() ledger.Write {
	return ledger.Write{Tenant: "t", Operator: true, IdempotencyKey: fmt.Sprintf("k-%d", keys.Add(1))}
}

func seed(t *testing.T, l *Ledger) {
	t.Helper()
	ctx := context.Background()
	for _, name := range []string{"cpu", "gpu"} {
		if _, err := l.CreateResource(ctx, op(), &ledgerdv1.Resource{Name: name, Capacity: 100}); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		if _, _, err := l.Hold(ctx, ledger.HoldArgs{Write: op(), Commit: true, Shape: ledger.Shape{
			Parts: []ledger.Part{{Resource: "cpu", Amount: 1}}, Duration: 60_000, NotBefore: t0 + 3_600_000, Deadline: ledger.NoDeadline}}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMaxTimeMatchesFSM(t *testing.T) {
	if ledger.MaxTimeMillis != fsm.MaxTimeMillis {
		t.Fatalf("ledger.MaxTimeMillis %d != fsm.MaxTimeMillis %d", ledger.MaxTimeMillis, fsm.MaxTimeMillis)
	}
	if got := ledger.MsToTimestamp(fsm.MaxTimeMillis).AsTime(); got.Format(time.RFC3339Nano) != "9999-12-31T23:59:59.999Z" {
		t.Fatalf("MaxTimeMillis is %s", got.Format(time.RFC3339Nano))
	}
}

// TestEnvelopeVersionFollowsCluster: what the ledger proposes depends on
// the version every server applies. Below 3, a forced delete is N+1
// entries and a modification is found first; at 3 each is one entry the
// state machine decides; without a Versioner the log is local and gets
// this release's version.
func TestEnvelopeVersionFollowsCluster(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		common      uint32 // 0: the log is no Versioner
		wantVersion uint32
		deletes     int // entries of the forced delete
	}{
		{"local log", 0, fsm.CurrentVersion, 1},
		{"all new", 3, 3, 1},
		{"mid upgrade", 2, 2, 5 + 1},
		{"unknown servers", 1, 1, 5 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := newFake(t)
			var log Log = fl
			if tc.common != 0 {
				log = &versionedLog{fakeLog: fl, common: tc.common}
			}
			l := New(log, fl.f)
			seed(t, l)
			r, _, err := l.Hold(ctx, ledger.HoldArgs{Write: ledger.Write{Tenant: "t", IdempotencyKey: "m", Fingerprint: bytes.Repeat([]byte{1}, 32)}, Commit: true,
				Shape: ledger.Shape{Parts: []ledger.Part{{Resource: "gpu", Amount: 1}}, Duration: 60_000, NotBefore: t0 + 60_000, Deadline: ledger.NoDeadline}})
			if err != nil {
				t.Fatal(err)
			}
			last := fl.cmds[len(fl.cmds)-1]
			if last.GetVersion() != tc.wantVersion {
				t.Fatalf("hold written as version %d, want %d", last.GetVersion(), tc.wantVersion)
			}
			if tc.wantVersion < 3 && len(last.GetFingerprint()) > 0 {
				t.Fatal("a fingerprint was proposed to a cluster that cannot apply it")
			}
			n := len(fl.cmds)
			if _, err := l.Modify(ctx, ledger.ModifyArgs{Write: ledger.Write{Tenant: "t", IdempotencyKey: "mod"}, ID: r.Id,
				Shape: ledger.Shape{Parts: []ledger.Part{{Resource: "gpu", Amount: 2}}, Duration: 60_000, NotBefore: t0 + 120_000, Deadline: ledger.NoDeadline}}); err != nil {
				t.Fatal(err)
			}
			m := fl.cmds[n].GetModify()
			if picked := m.GetWindowDurationMillis() > 0; picked != (tc.wantVersion >= 3) {
				t.Fatalf("modify at version %d: %v", tc.wantVersion, m)
			}
			n = len(fl.cmds)
			if err := l.DeleteResource(ctx, op(), "cpu", true); err != nil {
				t.Fatal(err)
			}
			if got := len(fl.cmds) - n; got != tc.deletes {
				t.Fatalf("forced delete took %d entries, want %d", got, tc.deletes)
			}
			if _, err := l.Get(ctx, r.Id, false); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestYear9999 refuses bookings past the end of time at every version
// (the newest checks run at the edge whatever is written) and answers
// Find "does not fit" rather than a start no Timestamp can carry.
func TestYear9999(t *testing.T) {
	ctx := context.Background()
	for _, common := range []uint32{2, 3} {
		fl := newFake(t)
		l := New(&versionedLog{fakeLog: fl, common: common}, fl.f)
		seed(t, l)
		late := ledger.Shape{Parts: []ledger.Part{{Resource: "cpu", Amount: 1}}, Duration: 7_200_000, NotBefore: fsm.MaxTimeMillis - 3_600_000, Deadline: ledger.NoDeadline}
		_, _, err := l.Hold(ctx, ledger.HoldArgs{Write: op(), Shape: late})
		var fe *ledger.FieldError
		if !errors.As(err, &fe) || fe.Field != "shape.duration" {
			t.Fatalf("version %d: hold ending after 9999: %v", common, err)
		}
		if _, err := l.Find(ctx, late); !errors.As(err, &fe) || fe.Field != "shape.duration" {
			t.Fatalf("version %d: find ending after 9999: %v", common, err)
		}
		// A window that fits only after the end of time does not fit.
		full := ledger.Shape{Parts: []ledger.Part{{Resource: "cpu", Amount: 100}}, Duration: 1_000, NotBefore: fsm.MaxTimeMillis - 10_000, Deadline: ledger.NoDeadline}
		if _, _, err := l.Hold(ctx, ledger.HoldArgs{Write: op(), Commit: true, Shape: ledger.Shape{Parts: full.Parts, Duration: 9_000, NotBefore: full.NotBefore, Deadline: ledger.NoDeadline}}); err != nil {
			t.Fatal(err)
		}
		probe := full
		probe.Duration = 2_000
		if f, err := l.Find(ctx, probe); err != nil || f.Fits {
			t.Fatalf("version %d: find past the end of time: %+v %v", common, f, err)
		}
	}
}

// TestReadsOfRowsPastTheEndOfTime: a ledger restored from a snapshot that
// holds a row booked past 9999 (by a release that did not refuse it)
// answers every read, JSON included, with the times clamped.
func TestReadsOfRowsPastTheEndOfTime(t *testing.T) {
	ctx := context.Background()
	fl := newFake(t)
	old := New(&versionedLog{fakeLog: fl, common: 1}, fl.f)
	seed(t, old)
	// What an older edge sent: a version 1 hold from late 9999.
	late := &fsmv1.Command{Type: fsmv1.Command_TYPE_RESERVE, Version: 1, Owner: "t", IdempotencyKey: "late",
		Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{Id: "late",
			Parts: []*fsmv1.Part{{Resource: "gpu", Amount: 1}}, DurationMillis: 7_200_000, NotBeforeMillis: fsm.MaxTimeMillis - 3_600_000}}}
	b, err := fsm.Encode(late)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := fsm.DecodeResult(must(fl.Apply(ctx, b))); err != nil || res.GetReservation().GetEndMillis() <= fsm.MaxTimeMillis {
		t.Fatalf("setting up the row: %v %v", res, err)
	}
	// Snapshot and restore into a fresh state machine.
	snap, err := fl.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	restored := newFake(t)
	if err := restored.f.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	l := New(restored, restored.f)
	var msgs []proto.Message
	r, err := l.Get(ctx, "late", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.End.AsTime().UnixMilli(); got != ledger.MaxTimeMillis {
		t.Errorf("end read as %d, want clamped to %d", got, ledger.MaxTimeMillis)
	}
	msgs = append(msgs, r)
	rs, _, err := l.List(ctx, ledger.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, &ledgerdv1.ListResponse{Reservations: rs})
	evs, err := l.History(ctx, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, &ledgerdv1.HistoryResponse{Events: evs})
	res, blocks, err := l.Availability(ctx, "gpu", t0, fsm.MaxTimeMillis)
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, &ledgerdv1.AvailabilityResponse{Resource: res, Blocks: blocks})
	all, err := l.Resources(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, &ledgerdv1.ResourceServiceListResponse{Resources: all})
	for _, m := range msgs {
		if _, err := protojson.Marshal(m); err != nil {
			t.Errorf("%T does not encode as JSON: %v", m, err)
		}
		if _, err := proto.Marshal(m); err != nil {
			t.Errorf("%T does not encode: %v", m, err)
		}
	}
	// And the ledger keeps admitting: a write after the row.
	if _, _, err := l.Hold(ctx, ledger.HoldArgs{Write: op(), Shape: ledger.Shape{Parts: []ledger.Part{{Resource: "gpu", Amount: 1}}, Duration: 1_000, NotBefore: t0, Deadline: ledger.NoDeadline}}); err != nil {
		t.Fatal(err)
	}
}

// TestMidUpgradeRefusal: a command that only the new version can carry
// and that has no older way is refused as unavailable, saying why.
func TestMidUpgradeRefusal(t *testing.T) {
	fl := newFake(t)
	l := New(&versionedLog{fakeLog: fl, common: 2}, fl.f)
	cmd := &fsmv1.Command{Type: fsmv1.Command_TYPE_DELETE_RESOURCE, Owner: "t",
		Payload: &fsmv1.Command_DeleteResource{DeleteResource: &fsmv1.DeleteResource{Name: "x", Force: true}}}
	_, err := l.apply(context.Background(), "delete resource", cmd)
	if !errors.Is(err, ledger.ErrUnavailable) || !errors.Is(err, ErrMidUpgrade) || !strings.Contains(err.Error(), "mid-upgrade") {
		t.Fatalf("forced delete command at version 2: %v", err)
	}
	if len(fl.cmds) != 0 {
		t.Fatal("proposed anyway")
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct{ bytes.Buffer }

func (*memSink) ID() string    { return "mem" }
func (*memSink) Cancel() error { return nil }
func (*memSink) Close() error  { return nil }

var _ raft.SnapshotSink = (*memSink)(nil)
