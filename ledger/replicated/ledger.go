package replicated

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/ledgerd/ledgerd/cluster"
	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
	"github.com/ledgerd/ledgerd/planner"
)

// Log is what Ledger needs from the cluster layer; *cluster.Node
// implements it. Apply replicates an encoded fsm command and returns the
// encoded fsm result; ReadBarrier waits until the local FSM reflects every
// acknowledged write.
type Log interface {
	Apply(ctx context.Context, cmd []byte) ([]byte, error)
	ReadBarrier(ctx context.Context) error
}

// Ledger implements Ledger on the replicated state machine: writes are
// encoded as fsm commands and go through the Log, reads come from
// the local FSM after a read barrier (or without one when stale is asked).
//
// It is the one place where API requests become fsm commands and fsm
// results become API answers and errors. It holds no state of its own.
type Ledger struct {
	log Log
	fsm *fsm.FSM
	// versions says which envelope version every server can apply; nil
	// when the Log does not say (then every server runs this release).
	// Kept apart from log, which a batch replaces by its pipeline.
	versions Versioner
	// series configures standing reservations (series.go).
	series seriesConfig
}

// resultLog is the optional part of a Log that returns the whole
// cluster.Result of a write: *cluster.Node and the pipeline's slots
// implement it. On the leader its Value is the FSM's *fsm.Applied, whose
// Result message the ledger reads instead of decoding the bytes.
type resultLog interface {
	ApplyResult(ctx context.Context, cmd []byte) cluster.Result
}

var _ resultLog = (*cluster.Node)(nil)

// Versioner is the optional part of a Log that knows the cluster's
// members: CommonEnvelopeVersion returns the highest fsm envelope version
// that every server of the Raft configuration can apply (a server whose
// version is not known counts as 1). *cluster.Node implements it. A
// command that needs a newer version is never proposed: an older replica
// would panic on it.
type Versioner interface {
	CommonEnvelopeVersion() uint32
}

var (
	_ ledger.Ledger    = (*Ledger)(nil)
	_ ledger.Pipeliner = (*Ledger)(nil)
)

// New returns the ledger that replicates writes through log and reads f,
// the FSM that log applies its entries to.
func New(log Log, f *fsm.FSM) *Ledger {
	l := &Ledger{log: log, fsm: f}
	if v, ok := log.(Versioner); ok {
		l.versions = v
	}
	return l
}

// version returns the envelope version to write: the highest that every
// server can apply, at most this release's.
func (l *Ledger) version() uint32 {
	if l.versions == nil {
		return fsm.CurrentVersion
	}
	return max(1, min(l.versions.CommonEnvelopeVersion(), fsm.CurrentVersion))
}

// ErrMidUpgrade is wrapped (with ledger.ErrUnavailable) by writes that
// need an envelope version some server cannot apply yet and have no older
// way to go.
var ErrMidUpgrade = errors.New("the cluster is mid-upgrade: a server cannot apply this request yet; retry once every server runs the new release")

// FSM returns the state machine the ledger reads.
func (l *Ledger) FSM() *fsm.FSM { return l.fsm }

// clusterErr maps the cluster sentinels to the API's outcome errors.
func clusterErr(op string, err error) error {
	switch {
	case errors.Is(err, cluster.ErrOutcomeUnknown):
		return fmt.Errorf("%s: %w: %w", op, ledger.ErrOutcomeUnknown, err)
	case errors.Is(err, cluster.ErrNoLeader), errors.Is(err, cluster.ErrNotLeader), errors.Is(err, cluster.ErrShutdown):
		return fmt.Errorf("%s: %w: %w", op, ledger.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// apply checks, encodes and replicates cmd and maps a non-OK result to an
// error. The FSM's own validator runs first, so a request that would be
// refused as invalid whatever the ledger's state never reaches the log;
// the command is encoded once, here, and the leader only stamps it.
func (l *Ledger) apply(ctx context.Context, op string, cmd *fsmv1.Command) (*fsmv1.Result, error) {
	res, err := l.applyResult(ctx, op, cmd)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// applyResult is apply that also returns the result when its status is
// an error (series report what could not be booked on a rejection).
func (l *Ledger) applyResult(ctx context.Context, op string, cmd *fsmv1.Command) (*fsmv1.Result, error) {
	if cmd.IdempotencyKey == "" {
		// Every write carries a key, so that the cluster may send it again
		// to a new leader when the leadership moves while its outcome is
		// unknown (the FSM answers a repeated key with its first result).
		// A keyless caller gets one here, on the node that takes the
		// request: made once per request, it is the same in every retry of
		// that request and never matches another request.
		cmd.IdempotencyKey = autoKey()
	}
	have := l.version()
	if have < 3 && len(cmd.Fingerprint) > 0 {
		// Older replicas do not know fingerprints: the key then answers
		// its first result whatever is sent with it, as it always did.
		cmd.Fingerprint = nil
	}
	// The newest checks run whatever version is written: they only add
	// refusals (the end of time), so nothing accepted here is refused
	// by a replica of any version. Check only reads the command, so it
	// sees it with the current version for the call (no copy: the
	// command is this call's own).
	given := cmd.Version
	cmd.Version = fsm.CurrentVersion
	err := l.fsm.Check(cmd)
	cmd.Version = given
	if err != nil {
		var fe *fsm.FieldError
		if errors.As(err, &fe) {
			return nil, fmt.Errorf("%s: %w", op, &ledger.FieldError{Field: fe.Field, Reason: fe.Reason})
		}
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if need := fsm.MinVersion(cmd); need > have {
		return nil, fmt.Errorf("%s: %w: %w (needs version %d, every server applies %d)", op, ledger.ErrUnavailable, ErrMidUpgrade, need, have)
	}
	cmd.Version = have
	b, err := fsm.Encode(cmd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var r cluster.Result
	if rl, ok := l.log.(resultLog); ok {
		r = rl.ApplyResult(ctx, b)
	} else {
		r.Data, r.Err = l.log.Apply(ctx, b)
	}
	if r.Err != nil {
		return nil, clusterErr(op, r.Err)
	}
	// Applied here (this node leads): the FSM's own message, read-only;
	// forwarded: the leader's bytes, decoded.
	res, err := fsm.ResultOf(r.Value, r.Data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := resultErr(res); err != nil {
		return res, fmt.Errorf("%s: %w", op, err)
	}
	return res, nil
}

// autoKey returns a fresh idempotency key for a write that came without
// one.
func autoKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "auto-" + hex.EncodeToString(b[:])
}

// outcome is an outcome error whose message already says what happened
// ("reservation \"x\" not found"): it matches its sentinel with
// errors.Is without repeating the sentinel's text ("...: not found").
type outcome struct {
	msg      string
	sentinel error
}

func (e outcome) Error() string { return e.msg }
func (e outcome) Unwrap() error { return e.sentinel }

// resultErr maps a result status to the API's outcome errors.
func resultErr(r *fsmv1.Result) error {
	switch r.GetStatus() {
	case fsmv1.Result_STATUS_OK:
		return nil
	case fsmv1.Result_STATUS_REJECTED:
		rj := r.GetRejected()
		if rj.GetUnmappable() {
			return &ledger.RejectedError{Reason: ledger.ReasonUnmappable, Message: r.GetMessage(), LaterOK: rj.GetLaterOk(), LaterStart: rj.GetLaterStartMillis()}
		}
		return &ledger.RejectedError{Reason: ledger.ReasonNoCapacity, Message: r.GetMessage(), LaterOK: rj.GetLaterOk(), LaterStart: rj.GetLaterStartMillis()}
	case fsmv1.Result_STATUS_INVALID:
		return &ledger.FieldError{Field: fsm.PublicField(r.GetInvalid().GetField()), Reason: r.GetInvalid().GetReason()}
	case fsmv1.Result_STATUS_NOT_FOUND:
		return outcome{r.GetMessage(), ledger.ErrNotFound}
	case fsmv1.Result_STATUS_LIMIT_EXCEEDED:
		return limitErr(r)
	case fsmv1.Result_STATUS_PERMISSION_DENIED:
		return outcome{r.GetMessage(), ledger.ErrPermission}
	case fsmv1.Result_STATUS_CONFLICT:
		c := r.GetConflict()
		switch c.GetKind() {
		case fsmv1.Conflict_KIND_DUPLICATE_ID, fsmv1.Conflict_KIND_RESOURCE_EXISTS:
			return outcome{r.GetMessage(), ledger.ErrExists}
		case fsmv1.Conflict_KIND_IN_USE:
			return outcome{r.GetMessage(), ledger.ErrInUse}
		case fsmv1.Conflict_KIND_CAPACITY:
			return outcome{fmt.Sprintf("%s (overbooked: %s)", r.GetMessage(), strings.Join(c.GetViolatedIds(), ",")), ledger.ErrInUse}
		default:
			return outcome{r.GetMessage(), ledger.ErrWrongState}
		}
	}
	return fmt.Errorf("unexpected result status %v: %s", r.GetStatus(), r.GetMessage())
}

func envelope(t fsmv1.Command_Type, w ledger.Write) *fsmv1.Command {
	return &fsmv1.Command{Type: t, IdempotencyKey: w.IdempotencyKey, Owner: w.Tenant, Privileged: w.Operator, Fingerprint: w.Fingerprint}
}

func fsmParts(ps []ledger.Part) []*fsmv1.Part {
	out := make([]*fsmv1.Part, len(ps))
	for i, p := range ps {
		out[i] = &fsmv1.Part{Resource: p.Resource, Amount: p.Amount}
	}
	return out
}

// plannerReq is the planner request of a read (Find, Offers): nothing
// may end after the end of time, so neither may an answer.
func plannerReq(s ledger.Shape) planner.Request {
	r := planner.Request{Duration: s.Duration, NotBefore: s.NotBefore, Deadline: min(s.Deadline, fsm.MaxTimeMillis)}
	for _, p := range s.Parts {
		r.Parts = append(r.Parts, planner.Part{Resource: p.Resource, Amount: p.Amount})
	}
	return r
}

// Hold implements Ledger.
func (l *Ledger) Hold(ctx context.Context, a ledger.HoldArgs) (*ledgerdv1.Reservation, []*ledgerdv1.MovedJob, error) {
	t, op := fsmv1.Command_TYPE_HOLD, "hold"
	if a.Commit {
		t, op = fsmv1.Command_TYPE_RESERVE, "reserve"
	}
	cmd := envelope(t, a.Write)
	req := &fsmv1.ReservationRequest{
		Id:              a.ID,
		Parts:           fsmParts(a.Shape.Parts),
		DurationMillis:  a.Shape.Duration,
		NotBeforeMillis: a.Shape.NotBefore,
		HoldTtlMillis:   a.TTL,
		Labels:          a.Labels,
	}
	if a.Shape.Deadline != ledger.NoDeadline {
		req.DeadlineMillis = a.Shape.Deadline
	}
	cmd.Payload = &fsmv1.Command_Request{Request: req}
	res, err := l.apply(ctx, op, cmd)
	if err != nil {
		return nil, nil, err
	}
	return reservationToAPI(res.GetReservation()), movesToAPI(res.GetMoved()), nil
}

func (l *Ledger) target(ctx context.Context, op string, t fsmv1.Command_Type, w ledger.Write, id string) (*ledgerdv1.Reservation, error) {
	cmd := envelope(t, w)
	cmd.Payload = &fsmv1.Command_Target{Target: &fsmv1.Target{Id: id}}
	res, err := l.apply(ctx, op, cmd)
	if err != nil {
		return nil, err
	}
	return reservationToAPI(res.GetReservation()), nil
}

// Commit implements Ledger.
func (l *Ledger) Commit(ctx context.Context, w ledger.Write, id string) (*ledgerdv1.Reservation, error) {
	return l.target(ctx, "commit", fsmv1.Command_TYPE_COMMIT, w, id)
}

// Abort implements Ledger.
func (l *Ledger) Abort(ctx context.Context, w ledger.Write, id string) (*ledgerdv1.Reservation, error) {
	return l.target(ctx, "abort", fsmv1.Command_TYPE_ABORT, w, id)
}

// Cancel implements Ledger.
func (l *Ledger) Cancel(ctx context.Context, w ledger.Write, id string) (*ledgerdv1.Reservation, error) {
	return l.target(ctx, "cancel", fsmv1.Command_TYPE_CANCEL, w, id)
}

// Complete implements Ledger.
func (l *Ledger) Complete(ctx context.Context, w ledger.Write, id string, at int64) (*ledgerdv1.Reservation, error) {
	cmd := envelope(fsmv1.Command_TYPE_COMPLETE, w)
	e := &fsmv1.Complete{Id: id}
	if at != 0 {
		e.AtMillis = &at
	}
	cmd.Payload = &fsmv1.Command_Complete{Complete: e}
	res, err := l.apply(ctx, "complete", cmd)
	if err != nil {
		return nil, err
	}
	return reservationToAPI(res.GetReservation()), nil
}

// Modify implements Ledger. The state machine picks the earliest start of
// the new shape inside its window (beside the current booking, which
// stays held until commit) when it applies the entry, so racing
// modifications are decided by the log. While a server cannot apply
// that yet (version < 3), the start is found here first and the entry
// carries an exact interval; if the schedule changes in between, the
// state machine rejects and the caller may retry.
func (l *Ledger) Modify(ctx context.Context, a ledger.ModifyArgs) (*ledgerdv1.Reservation, error) {
	if l.version() >= 3 {
		cmd := envelope(fsmv1.Command_TYPE_MODIFY, a.Write)
		m := &fsmv1.Modify{Id: a.ID, Parts: fsmParts(a.Shape.Parts), HoldTtlMillis: a.TTL,
			WindowDurationMillis: a.Shape.Duration, NotBeforeMillis: a.Shape.NotBefore}
		if a.Shape.Deadline != ledger.NoDeadline {
			m.DeadlineMillis = a.Shape.Deadline
		}
		cmd.Payload = &fsmv1.Command_Modify{Modify: m}
		res, err := l.apply(ctx, "modify", cmd)
		if err != nil {
			return nil, err
		}
		return reservationToAPI(res.GetReservation()), nil
	}
	return l.modifyFindFirst(ctx, a)
}

// modifyFindFirst is Modify for a cluster with servers older than
// envelope version 3.
func (l *Ledger) modifyFindFirst(ctx context.Context, a ledger.ModifyArgs) (*ledgerdv1.Reservation, error) {
	if err := l.barrier(ctx, "modify", false); err != nil {
		return nil, err
	}
	d, err := l.fsm.Find(plannerReq(a.Shape))
	if err != nil {
		return nil, fmt.Errorf("modify: %w", plannerErr(err))
	}
	if !d.Fits {
		return nil, &ledger.RejectedError{Reason: ledger.ReasonNoCapacity, Message: "the new shape does not fit in its window", LaterOK: d.LaterOK, LaterStart: d.LaterStart}
	}
	start, end := d.Start, d.Start+a.Shape.Duration
	cmd := envelope(fsmv1.Command_TYPE_MODIFY, a.Write)
	cmd.Payload = &fsmv1.Command_Modify{Modify: &fsmv1.Modify{
		Id: a.ID, Parts: fsmParts(a.Shape.Parts), StartMillis: &start, EndMillis: &end, HoldTtlMillis: a.TTL,
	}}
	res, err := l.apply(ctx, "modify", cmd)
	if err != nil {
		return nil, err
	}
	return reservationToAPI(res.GetReservation()), nil
}

func (l *Ledger) barrier(ctx context.Context, op string, stale bool) error {
	if stale {
		return nil
	}
	if err := l.log.ReadBarrier(ctx); err != nil {
		return clusterErr(op, err)
	}
	return nil
}

// Pipeline implements Pipeliner when the Log can apply batches.
func (l *Ledger) Pipeline(n int) ledger.Pipeline {
	br, ok := l.log.(BatchLog)
	if !ok {
		return nil
	}
	return newPipeline(br, n, func(r Log) ledger.Ledger {
		op := *l
		op.log = r
		return &op
	})
}

// plannerErr maps planner sentinels to the API's outcome errors.
func plannerErr(err error) error {
	var fe *planner.FieldError
	switch {
	case errors.As(err, &fe):
		return &ledger.FieldError{Field: "shape." + fe.Field, Reason: fe.Reason}
	case errors.Is(err, planner.ErrUnknownResource):
		return fmt.Errorf("%w: %w", ledger.ErrNotFound, err)
	}
	return err
}

// Get implements Ledger.
func (l *Ledger) Get(ctx context.Context, id string, stale bool) (*ledgerdv1.Reservation, error) {
	if why := fsm.ValidTargetID(id); why != "" {
		return nil, &ledger.FieldError{Field: "id", Reason: why}
	}
	if err := l.barrier(ctx, "get", stale); err != nil {
		return nil, err
	}
	r, ok := l.fsm.Get(id)
	if !ok {
		return nil, outcome{fmt.Sprintf("reservation %q not found", id), ledger.ErrNotFound}
	}
	return reservationToAPI(r), nil
}

// List implements Ledger.
func (l *Ledger) List(ctx context.Context, q ledger.ListQuery) ([]*ledgerdv1.Reservation, string, error) {
	if q.Series != "" {
		if why := fsm.ValidSeriesID(q.Series); why != "" {
			return nil, "", &ledger.FieldError{Field: "series_id", Reason: why}
		}
	}
	if err := l.barrier(ctx, "list", q.Stale); err != nil {
		return nil, "", err
	}
	f := fsm.Filter{Resource: q.Resource, Owner: q.Tenant, FromMillis: q.From, ToMillis: q.To, PageToken: q.PageToken, PageSize: q.Limit, Series: q.Series}
	for _, s := range q.States {
		f.States = append(f.States, fsmv1.Reservation_State(s))
	}
	rs, next, err := l.fsm.List(f)
	if err != nil {
		var fe *planner.FieldError
		if errors.As(err, &fe) {
			return nil, "", &ledger.FieldError{Field: fe.Field, Reason: fe.Reason}
		}
		return nil, "", fmt.Errorf("list: %w", err)
	}
	out := make([]*ledgerdv1.Reservation, len(rs))
	for i, r := range rs {
		out[i] = reservationToAPI(r)
	}
	return out, next, nil
}

// checkShape refuses a shape that a Hold of it would be refused for
// whatever the state, with the Hold's field and reason: a read answers
// only what a write could book.
func (l *Ledger) checkShape(op string, s ledger.Shape) error {
	req := &fsmv1.ReservationRequest{Parts: fsmParts(s.Parts), DurationMillis: s.Duration, NotBeforeMillis: s.NotBefore}
	if s.Deadline != ledger.NoDeadline {
		req.DeadlineMillis = s.Deadline
	}
	cmd := &fsmv1.Command{Type: fsmv1.Command_TYPE_HOLD, Version: fsm.CurrentVersion, Payload: &fsmv1.Command_Request{Request: req}}
	if err := l.fsm.Check(cmd); err != nil {
		var fe *fsm.FieldError
		if errors.As(err, &fe) {
			return fmt.Errorf("%s: %w", op, &ledger.FieldError{Field: fe.Field, Reason: fe.Reason})
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// Find implements Ledger.
func (l *Ledger) Find(ctx context.Context, s ledger.Shape) (ledger.FindResult, error) {
	if err := l.checkShape("find", s); err != nil {
		return ledger.FindResult{}, err
	}
	if err := l.barrier(ctx, "find", false); err != nil {
		return ledger.FindResult{}, err
	}
	d, err := l.fsm.Find(plannerReq(s))
	if err != nil {
		return ledger.FindResult{}, fmt.Errorf("find: %w", plannerErr(err))
	}
	return ledger.FindResult{Fits: d.Fits, Start: d.Start, LaterOK: d.LaterOK, LaterStart: d.LaterStart}, nil
}

// Offers implements Ledger.
func (l *Ledger) Offers(ctx context.Context, s ledger.Shape, k int) ([]int64, error) {
	if err := l.checkShape("offers", s); err != nil {
		return nil, err
	}
	if err := l.barrier(ctx, "offers", false); err != nil {
		return nil, err
	}
	out, err := l.fsm.Offers(plannerReq(s), k)
	if err != nil {
		return nil, fmt.Errorf("offers: %w", plannerErr(err))
	}
	return out, nil
}

// Availability implements Ledger.
func (l *Ledger) Availability(ctx context.Context, resource string, from, to int64) (*ledgerdv1.Resource, []*ledgerdv1.FreeBlock, error) {
	if why := fsm.ValidResourceName(resource); why != "" {
		return nil, nil, &ledger.FieldError{Field: "resource", Reason: why}
	}
	if err := l.barrier(ctx, "availability", false); err != nil {
		return nil, nil, err
	}
	r, ok := l.fsm.Resource(resource)
	if !ok {
		return nil, nil, outcome{fmt.Sprintf("resource %q not found", resource), ledger.ErrNotFound}
	}
	bs, err := l.fsm.Availability(resource, from, to)
	if err != nil {
		return nil, nil, fmt.Errorf("availability: %w", plannerErr(err))
	}
	out := make([]*ledgerdv1.FreeBlock, len(bs))
	for i, b := range bs {
		out[i] = &ledgerdv1.FreeBlock{Start: ledger.MsToTimestamp(b.Start), End: ledger.MsToTimestamp(min(b.End, to)), Free: b.Free}
	}
	return resourceToAPI(r), out, nil
}

// History implements Ledger.
func (l *Ledger) History(_ context.Context, version uint64, index uint32, limit int) ([]*ledgerdv1.Event, error) {
	if oldest := l.fsm.OldestVersion(); oldest > version && version > 0 {
		// Events before oldest are gone only if the history ever reached
		// its limit; until then everything since version 1 is retained.
		if l.fsm.Stats().HistoryLen >= l.fsm.HistoryLimit() {
			return nil, fmt.Errorf("history from version %d: oldest retained is %d: %w", version, oldest, ledger.ErrCompacted)
		}
	}
	evs := l.fsm.History(version, limit)
	out := make([]*ledgerdv1.Event, 0, len(evs))
	for _, e := range evs {
		if e.GetVersion() == version && e.GetSeq() < index {
			continue
		}
		out = append(out, eventToAPI(e))
	}
	return out, nil
}

// Notify implements Ledger.
func (l *Ledger) Notify(after uint64) <-chan struct{} {
	ch := l.fsm.Notify()
	if l.fsm.AppliedIndex() > after {
		done := make(chan struct{})
		close(done)
		return done
	}
	return ch
}

// Version implements Ledger.
func (l *Ledger) Version() uint64 { return l.fsm.AppliedIndex() }

// CreateResource implements Ledger.
func (l *Ledger) CreateResource(ctx context.Context, w ledger.Write, r *ledgerdv1.Resource) (*ledgerdv1.Resource, error) {
	cmd := envelope(fsmv1.Command_TYPE_CREATE_RESOURCE, w)
	cmd.Payload = &fsmv1.Command_CreateResource{CreateResource: &fsmv1.CreateResource{
		Name: r.Name, Capacity: r.Capacity, Unit: r.Unit, Labels: r.Labels,
		Policy: policySpec(r.Policy, r.MinSuccessPermille, r.MaxPushes),
		Units:  r.Units, UnitPolicy: fsmUnitPolicy(r.UnitPolicy),
	}}
	res, err := l.apply(ctx, "create resource", cmd)
	if err != nil {
		return nil, err
	}
	return resourceToAPI(res.GetResource()), nil
}

// UpdateCapacity implements Ledger.
func (l *Ledger) UpdateCapacity(ctx context.Context, a ledger.CapacityArgs) (*ledgerdv1.Resource, error) {
	u := &fsmv1.UpdateResource{Name: a.Name, Capacity: a.Capacity}
	if a.From != 0 || a.To != 0 {
		from := a.From
		u.FromMillis = &from
		if a.To != ledger.NoDeadline {
			to := a.To
			u.ToMillis = &to
		}
	}
	cmd := envelope(fsmv1.Command_TYPE_UPDATE_RESOURCE, a.Write)
	cmd.Payload = &fsmv1.Command_UpdateResource{UpdateResource: u}
	res, err := l.apply(ctx, "update capacity", cmd)
	if err != nil {
		return nil, err
	}
	return resourceToAPI(res.GetResource()), nil
}

// DeleteResource implements Ledger. With force, live reservations on the
// resource are aborted (holds) or cancelled (commitments) and the
// resource deleted, all in one log entry; without force the fsm refuses
// while any live reservation exists. While a server cannot apply forced
// deletes (version < 3), they take the older way: each reservation as its
// own idempotent write, then the delete.
func (l *Ledger) DeleteResource(ctx context.Context, w ledger.Write, name string, force bool) error {
	if force && l.version() >= 3 {
		cmd := envelope(fsmv1.Command_TYPE_DELETE_RESOURCE, w)
		cmd.Payload = &fsmv1.Command_DeleteResource{DeleteResource: &fsmv1.DeleteResource{Name: name, Force: true}}
		_, err := l.apply(ctx, "delete resource", cmd)
		return err
	}
	if force {
		if err := l.barrier(ctx, "delete resource", false); err != nil {
			return err
		}
		live := []fsmv1.Reservation_State{fsmv1.Reservation_STATE_HELD, fsmv1.Reservation_STATE_COMMITTED, fsmv1.Reservation_STATE_ACTIVE, fsmv1.Reservation_STATE_DEGRADED}
		token := ""
		for {
			rs, next, err := l.fsm.List(fsm.Filter{Resource: name, States: live, PageToken: token, PageSize: fsm.MaxPageSize})
			if err != nil {
				return fmt.Errorf("delete resource: %w", err)
			}
			for _, r := range rs {
				t, op := fsmv1.Command_TYPE_CANCEL, "cancel"
				if r.GetState() == fsmv1.Reservation_STATE_HELD {
					t, op = fsmv1.Command_TYPE_ABORT, "abort"
				}
				sub := ledger.Write{Tenant: w.Tenant, Operator: true, IdempotencyKey: w.IdempotencyKey + "/" + op + "/" + r.GetId()}
				if _, err := l.target(ctx, "delete resource: "+op, t, sub, r.GetId()); err != nil && !errors.Is(err, ledger.ErrWrongState) && !errors.Is(err, ledger.ErrNotFound) {
					return err
				}
			}
			if next == "" {
				break
			}
			token = next
		}
	}
	cmd := envelope(fsmv1.Command_TYPE_DELETE_RESOURCE, w)
	cmd.Payload = &fsmv1.Command_DeleteResource{DeleteResource: &fsmv1.DeleteResource{Name: name}}
	_, err := l.apply(ctx, "delete resource", cmd)
	return err
}

// Resources implements Ledger.
func (l *Ledger) Resources(ctx context.Context, stale bool) ([]*ledgerdv1.Resource, error) {
	if err := l.barrier(ctx, "resources", stale); err != nil {
		return nil, err
	}
	rs := l.fsm.Resources()
	out := make([]*ledgerdv1.Resource, len(rs))
	for i, r := range rs {
		out[i] = resourceToAPI(r)
	}
	return out, nil
}

// reservationToAPI converts an fsm row to the public message. The state
// enums share their numbers.
func reservationToAPI(r *fsmv1.Reservation) *ledgerdv1.Reservation {
	if r == nil {
		return nil
	}
	out := &ledgerdv1.Reservation{
		Id:             r.GetId(),
		Tenant:         r.GetOwner(),
		Start:          ledger.MsToTimestamp(r.GetStartMillis()),
		End:            ledger.MsToTimestamp(r.GetEndMillis()),
		State:          ledgerdv1.ReservationState(r.GetState()),
		Labels:         r.GetLabels(),
		CreatedVersion: r.GetCreatedVersion(),
		Version:        r.GetUpdatedVersion(),
		SeriesId:       seriesOf(r.GetId()),
	}
	for _, p := range r.GetParts() {
		out.Parts = append(out.Parts, &ledgerdv1.ResourceAmount{Resource: p.GetResource(), Amount: p.GetAmount()})
	}
	if ms := r.GetHoldExpiresMillis(); ms != 0 {
		out.HoldExpiresAt = ledger.MsToTimestamp(ms)
	}
	if pm := r.GetPending(); pm != nil {
		p := &ledgerdv1.PendingModification{Start: ledger.MsToTimestamp(pm.GetStartMillis()), End: ledger.MsToTimestamp(pm.GetEndMillis())}
		if ms := pm.GetHoldExpiresMillis(); ms != 0 {
			p.HoldExpiresAt = ledger.MsToTimestamp(ms)
		}
		for _, part := range pm.GetParts() {
			p.Parts = append(p.Parts, &ledgerdv1.ResourceAmount{Resource: part.GetResource(), Amount: part.GetAmount()})
		}
		out.Pending = p
	}
	if d := r.GetRequestedDurationMillis(); d != 0 {
		out.RequestedDuration = ledger.MsToDuration(d)
	}
	if ms := r.GetActualEndMillis(); ms != 0 {
		out.ActualEnd = ledger.MsToTimestamp(ms)
	}
	schedulerToAPI(out, r)
	unitsToAPI(out, r)
	out.ApprovalReason, out.DecisionReason = r.GetApprovalReason(), r.GetDecisionReason()
	materializationToAPI(out, r)
	return out
}

func resourceToAPI(r *fsmv1.Resource) *ledgerdv1.Resource {
	if r == nil {
		return nil
	}
	out := &ledgerdv1.Resource{
		Name: r.GetName(), Capacity: r.GetCapacity(), Unit: r.GetUnit(), Labels: r.GetLabels(),
		Version: r.GetUpdatedVersion(),
	}
	for _, w := range r.GetWindows() {
		out.Windows = append(out.Windows, &ledgerdv1.CapacityWindow{
			Start: ledger.MsToTimestamp(w.GetFromMillis()), End: ledger.MsToTimestamp(w.GetToMillis()), Capacity: w.GetCapacity()})
	}
	policyToAPI(out, r.GetPolicy())
	resourceUnitsToAPI(out, r)
	return out
}

func eventToAPI(e *fsmv1.Event) *ledgerdv1.Event {
	out := &ledgerdv1.Event{
		Version: e.GetVersion(),
		Index:   e.GetSeq(),
		Time:    ledger.MsToTimestamp(e.GetAtMillis()),
		Action:  strings.ToLower(strings.TrimPrefix(e.GetType().String(), "TYPE_")),
	}
	if t, ok := policyEventType(e.GetType()); ok {
		out.Type = t
	} else if t, ok := unitEventType(e.GetType()); ok {
		out.Type = t
	} else if e.GetType() == fsmv1.Event_TYPE_MATERIALIZATION_CHANGED {
		out.Type = ledgerdv1.EventType_EVENT_TYPE_MATERIALIZATION
	} else {
		switch e.GetType() {
		case fsmv1.Event_TYPE_RESOURCE_CREATED, fsmv1.Event_TYPE_RESOURCE_UPDATED, fsmv1.Event_TYPE_UNITS_CHANGED:
			out.Type = ledgerdv1.EventType_EVENT_TYPE_RESOURCE
		case fsmv1.Event_TYPE_RESOURCE_DELETED:
			out.Type = ledgerdv1.EventType_EVENT_TYPE_RESOURCE_DELETED
		case fsmv1.Event_TYPE_LIMITS_CHANGED:
			out.Type, out.Limit = ledgerdv1.EventType_EVENT_TYPE_LIMITS_CHANGED, limitToAPI(e.GetLimit())
		default:
			out.Type = ledgerdv1.EventType_EVENT_TYPE_RESERVATION
		}
	}
	out.Reservation = reservationToAPI(e.GetReservation())
	out.Resource = resourceToAPI(e.GetResource())
	return out
}
