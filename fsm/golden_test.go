package fsm

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/proto"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenCommands is one fixed command of every type, in the order the
// golden script applies them. The file names are part of the format
// record: never renumber them, only add.
func goldenCommands() []goldenEntry {
	labels := map[string]string{"team": "physics", "queue": "batch"}
	out := []goldenEntry{
		{"01_create_resource.bin", 1_000, &fsmv1.Command{Type: fsmv1.Command_TYPE_CREATE_RESOURCE, Owner: "ops", IdempotencyKey: "c1",
			Payload: &fsmv1.Command_CreateResource{CreateResource: &fsmv1.CreateResource{Name: "cluster/cores", Capacity: 128, Unit: "cores", Labels: labels}}}},
		{"02_create_resource.bin", 1_001, &fsmv1.Command{Type: fsmv1.Command_TYPE_CREATE_RESOURCE, Owner: "ops",
			Payload: &fsmv1.Command_CreateResource{CreateResource: &fsmv1.CreateResource{Name: "gpu", Capacity: 8, Unit: "GPUs"}}}},
		{"03_update_resource_window.bin", 1_002, &fsmv1.Command{Type: fsmv1.Command_TYPE_UPDATE_RESOURCE, Owner: "ops",
			Payload: &fsmv1.Command_UpdateResource{UpdateResource: &fsmv1.UpdateResource{Name: "cluster/cores", Capacity: 64, FromMillis: proto.Int64(50_000), ToMillis: proto.Int64(60_000)}}}},
		{"04_hold.bin", 1_010, &fsmv1.Command{Type: fsmv1.Command_TYPE_HOLD, Owner: "broker-1", IdempotencyKey: "h1",
			Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{
				Id: "job-1", Parts: []*fsmv1.Part{{Resource: "gpu", Amount: 2}, {Resource: "cluster/cores", Amount: 64}},
				DurationMillis: 3_600_000, NotBeforeMillis: 10_000, DeadlineMillis: 100_000_000, HoldTtlMillis: 20_000, Labels: labels}}}},
		{"05_commit.bin", 1_020, &fsmv1.Command{Type: fsmv1.Command_TYPE_COMMIT, Owner: "broker-1",
			Payload: &fsmv1.Command_Target{Target: &fsmv1.Target{Id: "job-1"}}}},
		{"06_reserve.bin", 1_030, &fsmv1.Command{Type: fsmv1.Command_TYPE_RESERVE, Owner: "broker-2", IdempotencyKey: "r1",
			Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{
				Parts: []*fsmv1.Part{{Resource: "cluster/cores", Amount: 32}}, DurationMillis: 600_000, StartMillis: proto.Int64(7_200_000)}}}},
		{"07_modify.bin", 1_040, &fsmv1.Command{Type: fsmv1.Command_TYPE_MODIFY, Owner: "broker-1",
			Payload: &fsmv1.Command_Modify{Modify: &fsmv1.Modify{Id: "job-1", Parts: []*fsmv1.Part{{Resource: "gpu", Amount: 4}}, StartMillis: proto.Int64(20_000_000), HoldTtlMillis: 5_000}}}},
		{"08_abort.bin", 1_050, &fsmv1.Command{Type: fsmv1.Command_TYPE_ABORT, Owner: "broker-1",
			Payload: &fsmv1.Command_Target{Target: &fsmv1.Target{Id: "job-1"}}}},
		{"09_hold.bin", 1_060, &fsmv1.Command{Type: fsmv1.Command_TYPE_HOLD, Owner: "broker-3",
			Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{
				Id: "tentative", Parts: []*fsmv1.Part{{Resource: "gpu", Amount: 1}}, DurationMillis: 60_000, StartMillis: proto.Int64(90_000_000), HoldTtlMillis: 1_000}}}},
		{"10_expire.bin", 3_000, &fsmv1.Command{Type: fsmv1.Command_TYPE_EXPIRE, Payload: &fsmv1.Command_Expire{Expire: &fsmv1.Expire{}}}},
		{"11_cancel.bin", 3_010, &fsmv1.Command{Type: fsmv1.Command_TYPE_CANCEL, Owner: "broker-2", IdempotencyKey: "x1",
			Payload: &fsmv1.Command_Target{Target: &fsmv1.Target{Id: AutoID(6)}}}},
		{"12_update_resource.bin", 3_020, &fsmv1.Command{Type: fsmv1.Command_TYPE_UPDATE_RESOURCE, Owner: "ops", Privileged: true,
			Payload: &fsmv1.Command_UpdateResource{UpdateResource: &fsmv1.UpdateResource{Name: "gpu", Capacity: 16}}}},
		{"13_create_resource.bin", 3_030, &fsmv1.Command{Type: fsmv1.Command_TYPE_CREATE_RESOURCE, Owner: "ops",
			Payload: &fsmv1.Command_CreateResource{CreateResource: &fsmv1.CreateResource{Name: "license", Capacity: 5}}}},
		{"14_delete_resource.bin", 3_040, &fsmv1.Command{Type: fsmv1.Command_TYPE_DELETE_RESOURCE, Owner: "ops",
			Payload: &fsmv1.Command_DeleteResource{DeleteResource: &fsmv1.DeleteResource{Name: "license"}}}},
		{"15_complete.bin", 3_050, &fsmv1.Command{Type: fsmv1.Command_TYPE_COMPLETE, Owner: "broker-1", IdempotencyKey: "e1",
			Payload: &fsmv1.Command_Complete{Complete: &fsmv1.Complete{Id: "job-1", AtMillis: proto.Int64(1_000_000)}}}},
		// Envelope version 2: admission policies and variable jobs.
		{"16_create_resource_policy.bin", 3_060, &fsmv1.Command{Type: fsmv1.Command_TYPE_CREATE_RESOURCE, Owner: "ops",
			Payload: &fsmv1.Command_CreateResource{CreateResource: &fsmv1.CreateResource{Name: "batch", Capacity: 16, Unit: "cores",
				Policy: &fsmv1.PolicySpec{Policy: fsmv1.AdmissionPolicy_ADMISSION_POLICY_MOVE_VARIABLE, MaxPushes: 3}}}}},
		{"17_submit_job.bin", 3_070, &fsmv1.Command{Type: fsmv1.Command_TYPE_SUBMIT_JOB, Owner: "broker-4", IdempotencyKey: "j1",
			Payload: &fsmv1.Command_SubmitJob{SubmitJob: &fsmv1.SubmitJob{Id: "sim-1", Part: &fsmv1.Part{Resource: "batch", Amount: 12},
				DurationMillis: 50_000, NotBeforeMillis: 10_000, Labels: labels}}}},
		{"18_set_policy.bin", 3_080, &fsmv1.Command{Type: fsmv1.Command_TYPE_SET_POLICY, Owner: "ops", Privileged: true,
			Payload: &fsmv1.Command_SetPolicy{SetPolicy: &fsmv1.SetPolicy{Name: "gpu",
				Policy: &fsmv1.PolicySpec{Policy: fsmv1.AdmissionPolicy_ADMISSION_POLICY_RELAXED, MinSuccessPermille: 900}}}}},
		{"19_reserve_move.bin", 3_090, &fsmv1.Command{Type: fsmv1.Command_TYPE_RESERVE, Owner: "broker-5",
			Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{
				Parts: []*fsmv1.Part{{Resource: "batch", Amount: 8}}, DurationMillis: 10_000, StartMillis: proto.Int64(20_000)}}}},
		{"20_set_policy.bin", 3_100, &fsmv1.Command{Type: fsmv1.Command_TYPE_SET_POLICY, Owner: "ops", Privileged: true,
			Payload: &fsmv1.Command_SetPolicy{SetPolicy: &fsmv1.SetPolicy{Name: "batch",
				Policy: &fsmv1.PolicySpec{Policy: fsmv1.AdmissionPolicy_ADMISSION_POLICY_RELAXED, MinSuccessPermille: 700}}}}},
		// Co-reservation (still envelope version 2).
		{"21_co_reserve.bin", 3_110, &fsmv1.Command{Type: fsmv1.Command_TYPE_CO_RESERVE, Owner: "broker-6", IdempotencyKey: "co1",
			Payload: &fsmv1.Command_CoReserve{CoReserve: &fsmv1.CoReserve{Id: "co-1",
				Subs:       []*fsmv1.CoSub{{Amount: 4, StartMillis: 40_000, DurationMillis: 10_000}, {Amount: 40, StartMillis: 100_000, DurationMillis: 5_000}},
				Candidates: []string{"batch", "cluster/cores"}, MinJointPermille: 500, Labels: labels}}}},
		// Envelope version 3: fingerprints, modify windows, forced
		// deletes, the end-of-time bound.
		{"22_reserve_v3.bin", 3_120, &fsmv1.Command{Type: fsmv1.Command_TYPE_RESERVE, Version: 3, Owner: "broker-7", IdempotencyKey: "r3",
			Fingerprint: goldenFingerprint(1),
			Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{
				Parts: []*fsmv1.Part{{Resource: "gpu", Amount: 2}}, DurationMillis: 60_000, NotBeforeMillis: 200_000}}}},
		{"23_modify_window.bin", 3_130, &fsmv1.Command{Type: fsmv1.Command_TYPE_MODIFY, Owner: "broker-7",
			Payload: &fsmv1.Command_Modify{Modify: &fsmv1.Modify{Id: AutoID(22), Parts: []*fsmv1.Part{{Resource: "gpu", Amount: 3}},
				WindowDurationMillis: 30_000, NotBeforeMillis: 500_000, DeadlineMillis: 10_000_000}}}},
		{"24_delete_resource_force.bin", 3_140, &fsmv1.Command{Type: fsmv1.Command_TYPE_DELETE_RESOURCE, Owner: "ops", Privileged: true,
			Payload: &fsmv1.Command_DeleteResource{DeleteResource: &fsmv1.DeleteResource{Name: "gpu", Force: true}}}},
		{"25_reserve_key_reused.bin", 3_150, &fsmv1.Command{Type: fsmv1.Command_TYPE_RESERVE, Version: 3, Owner: "broker-7", IdempotencyKey: "r3",
			Fingerprint: goldenFingerprint(2),
			Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{
				Parts: []*fsmv1.Part{{Resource: "cluster/cores", Amount: 1}}, DurationMillis: 60_000, NotBeforeMillis: 200_000}}}},
	}
	// Envelope version 4, standing reservations: files 40_ to 49_
	// (series_golden_test.go).
	out = append(out, seriesGoldenCommands()...)
	return out
}

// goldenFingerprint is a fixed 32-byte fingerprint.
func goldenFingerprint(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// coreserveGolden is the number of golden entries pinned by
// snapshot-v1-coreserve.golden.
const coreserveGolden = 21

// policyGolden is the number of golden entries pinned by
// snapshot-v1-policies.golden (entries added later have their own
// snapshot, so that file stays as it was recorded).
const policyGolden = 20

// edgeGolden is the number of golden entries pinned by
// snapshot-v1-edge.golden: 01 to 25, whatever is added after them.
const edgeGolden = 25

// legacyGolden is the number of golden entries written by envelope
// version 1; snapshot-v1.golden pins the state after exactly these, so
// that an old log still produces the same snapshot bytes.
const legacyGolden = 15

// goldenStatuses are the results the golden script must produce.
var goldenStatuses = []fsmv1.Result_Status{
	OK, OK, OK, OK, OK, OK, OK, OK, OK, OK, OK, OK, OK, OK, OK,
	// 18: gpu still carries job-1, booked outside the scheduler, so it
	// cannot become RELAXED.
	OK, OK, CONFLICT, OK, OK,
	OK,
	// 25: key r3 reused by its owner for another request.
	OK, OK, OK, INVALID,
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./fsm -run Golden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s changed: the encoding of log entries or snapshots is part of the on-disk format; "+
			"if the change is intended and backwards compatible, rerun with -update and say so in the commit", path)
	}
}

// TestGoldenCommands pins the encoding of every command type and checks
// that stored entries still decode to the same commands.
func TestGoldenCommands(t *testing.T) {
	seen := map[fsmv1.Command_Type]bool{}
	for _, g := range slices.Concat(goldenCommands(), unitsGoldenCommands(), limitsGoldenCommands(), bridgeGoldenCommands(), unitsChangeGoldenCommands(), groupGoldenCommands(t), retentionGoldenCommands()) {
		checkGoldenEntry(t, g)
		seen[g.cmd.GetType()] = true
	}
	for v := range fsmv1.Command_Type_name {
		if typ := fsmv1.Command_Type(v); typ != fsmv1.Command_TYPE_UNKNOWN && !seen[typ] {
			t.Errorf("no golden entry of type %s", typ)
		}
	}
}

// checkGoldenEntry pins one golden command file: the encoder still
// writes its bytes, and the stored bytes still decode to the command, at
// the version it needs and the log time it was stamped with. It returns
// the decoded entry.
func checkGoldenEntry(t *testing.T, g goldenEntry) *fsmv1.Command {
	t.Helper()
	b, err := Encode(g.cmd)
	if err != nil {
		t.Fatal(err)
	}
	b, err = Stamp(b, g.now)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "commands", g.file)
	checkGolden(t, path, b)
	stored, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := Decode(stored)
	if err != nil {
		t.Fatalf("%s: stored entry no longer decodes: %v", path, err)
	}
	want := proto.CloneOf(g.cmd)
	want.Version, want.NowMillis = entryVersion(g.cmd), g.now
	if !proto.Equal(dec, want) {
		t.Fatalf("%s decodes to\n%v\nwant\n%v", path, dec, want)
	}
	return dec
}

// TestGoldenSnapshot replays the stored golden entries of envelope
// version 1 and pins the snapshot they produce; the stored snapshot must
// restore and re-encode to the same bytes.
func TestGoldenSnapshot(t *testing.T) {
	g := goldenReplay(t, legacyGolden, "snapshot-v1.golden")
	want := map[string]fsmv1.Reservation_State{
		"job-1": COMMITTED, "tentative": EXPIRED, AutoID(6): CANCELLED,
	}
	for id, st := range want {
		r, ok := g.Get(id)
		if !ok || r.GetState() != st {
			t.Errorf("%s: %v, want %s", id, r.GetState(), st)
		}
	}
	if r, _ := g.Get("job-1"); r.GetEndMillis() != 1_000_000 || r.GetActualEndMillis() != 1_000_000 || r.GetRequestedDurationMillis() != 3_600_000 {
		t.Errorf("job-1 after early completion: end %d actual %d requested %d, want 1000000 1000000 3600000",
			r.GetEndMillis(), r.GetActualEndMillis(), r.GetRequestedDurationMillis())
	}
}

// TestGoldenPolicySnapshot does the same with every golden entry, so the
// scheduler's part of the snapshot (items, policies on resource rows) is
// pinned as well.
func TestGoldenPolicySnapshot(t *testing.T) {
	g := goldenReplay(t, policyGolden, "snapshot-v1-policies.golden")
	job, _ := g.Get("sim-1")
	if job.GetKind() != JOB || job.GetStartMillis() != 30_000 || job.GetPushes() != 1 || job.GetState() != COMMITTED {
		t.Errorf("sim-1 after the move: %v", job)
	}
	if r, _ := g.Get(AutoID(19)); r.GetProbabilityPermille() != 1000 || r.GetStartMillis() != 20_000 {
		t.Errorf("reservation that moved sim-1: %v", r)
	}
	if r, _ := g.Resource("batch"); !proto.Equal(r.GetPolicy(), spec(RELAXED, 700, 0)) {
		t.Errorf("batch policy %v", r.GetPolicy())
	}
	if r, _ := g.Resource("gpu"); r.GetPolicy() != nil {
		t.Errorf("gpu policy %v after a refused change", r.GetPolicy())
	}
}

// goldenReplay applies the first n stored golden entries, checks their
// statuses, pins the snapshot under testdata/name, and returns a state
// machine restored from the stored snapshot after checking that it
// re-encodes to the same bytes.
func goldenReplay(t *testing.T, n int, name string) *FSM {
	t.Helper()
	return goldenReplayOf(t, goldenCommands()[:n], goldenStatuses[:n], name)
}

// goldenEntry is one golden command.
type goldenEntry = struct {
	file string
	now  int64
	cmd  *fsmv1.Command
}

// goldenReplayOf is goldenReplay for an explicit selection of entries
// and the statuses they must produce, applied at indexes 1, 2, ...: one
// status per result, so a group entry takes one per member.
func goldenReplayOf(t *testing.T, entries []goldenEntry, statuses []fsmv1.Result_Status, name string) *FSM {
	t.Helper()
	f, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range entries {
		b, err := os.ReadFile(filepath.Join("testdata", "commands", g.file))
		if err != nil && !*update {
			t.Fatal(err)
		}
		if *update {
			if b, err = Encode(g.cmd); err == nil {
				b, err = Stamp(b, g.now)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		for j, out := range f.ApplyEntry(uint64(i+1), b) {
			enc, _ := out.([]byte)
			res, err := DecodeResult(enc)
			if err != nil {
				t.Fatal(err)
			}
			if len(statuses) == 0 {
				t.Fatalf("%s: result %d: more results than statuses", g.file, j)
			}
			if res.GetStatus() != statuses[0] {
				t.Fatalf("%s: result %d: %s (%s), want %s", g.file, j, res.GetStatus(), res.GetMessage(), statuses[0])
			}
			statuses = statuses[1:]
		}
	}
	if len(statuses) > 0 {
		t.Fatalf("%d statuses left over: fewer results than statuses", len(statuses))
	}
	checkInvariants(t, f)
	snap := snapshotBytes(t, f)
	path := filepath.Join("testdata", name)
	checkGolden(t, path, snap)

	stored, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Restore(io.NopCloser(bytes.NewReader(stored))); err != nil {
		t.Fatalf("stored snapshot does not restore: %v", err)
	}
	if again := snapshotBytes(t, g); !bytes.Equal(again, stored) {
		t.Fatal("stored snapshot does not re-encode to the same bytes")
	}
	checkInvariants(t, g)
	return g
}

// TestGoldenCoReserveSnapshot pins the snapshot after every golden entry,
// the co-reservation included: its sub-reservations are scheduler items.
func TestGoldenCoReserveSnapshot(t *testing.T) {
	g := goldenReplay(t, coreserveGolden, "snapshot-v1-coreserve.golden")
	want := map[string]string{"co-1/0": "batch", "co-1/1": "cluster/cores"}
	for id, res := range want {
		r, ok := g.Get(id)
		if !ok || r.GetState() != COMMITTED || r.GetParts()[0].GetResource() != res || r.GetProbabilityPermille() != 1000 {
			t.Errorf("%s: %v, want COMMITTED on %s", id, r, res)
		}
	}
}

// TestGoldenEdgeSnapshot pins the snapshot after every golden entry, the
// version 3 ones included: the modification whose start the state
// machine picked, the forced delete that cancelled everything on gpu in
// its one entry, and the reused key that changed nothing.
func TestGoldenEdgeSnapshot(t *testing.T) {
	g := goldenReplay(t, edgeGolden, "snapshot-v1-edge.golden")
	if _, ok := g.Resource("gpu"); ok {
		t.Error("gpu survived its forced delete")
	}
	for id, want := range map[string]fsmv1.Reservation_State{"job-1": CANCELLED, AutoID(22): CANCELLED, "tentative": fsmv1.Reservation_STATE_EXPIRED} {
		if r, _ := g.Get(id); r.GetState() != want || r.GetPending() != nil {
			t.Errorf("%s after the forced delete: %v, want %s", id, r, want)
		}
	}
	if _, ok := g.Get(AutoID(25)); ok {
		t.Error("the reused key booked something")
	}
	evs := g.History(24, 0)
	var kinds []string
	for _, e := range evs {
		if e.GetVersion() == 24 {
			kinds = append(kinds, e.GetType().String())
		}
	}
	want := []string{"TYPE_CANCELLED", "TYPE_CANCELLED", "TYPE_RESOURCE_DELETED"}
	if strings.Join(kinds, ",") != strings.Join(want, ",") {
		t.Errorf("events of the forced delete: %v, want %v", kinds, want)
	}
}
