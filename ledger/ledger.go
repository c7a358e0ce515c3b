package ledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// Part is one resource's share of a request.
type Part struct {
	Resource string
	Amount   int64
}

// Shape is a validated request shape in Unix milliseconds: every part over
// [s, s+Duration) for one start s with NotBefore <= s and s+Duration <=
// Deadline. Deadline is NoDeadline when the caller gave none.
type Shape struct {
	Parts     []Part
	Duration  int64
	NotBefore int64
	Deadline  int64
}

// NoDeadline is the Deadline of a shape without one.
const NoDeadline int64 = 1<<63 - 1

// MaxTimeMillis is 9999-12-31T23:59:59.999Z in Unix milliseconds, the
// last instant a google.protobuf.Timestamp (and its JSON form) can carry
// at millisecond precision. Nothing the ledger accepts may begin or end
// after it; readers clamp anything stored before that rule to it (see
// MsToTimestamp).
const MaxTimeMillis int64 = 253402300799999

// Write carries what every mutating call has in common.
type Write struct {
	// Tenant performing the call; it owns what it creates.
	Tenant string
	// Operator may act on every tenant's reservations. Otherwise the Ledger
	// must refuse (ErrPermission), atomically with the write, to touch a
	// reservation owned by another tenant.
	Operator bool
	// IdempotencyKey deduplicates retries; never empty (the server fills
	// one in when the caller did not).
	IdempotencyKey string
	// Fingerprint identifies what the caller sent (a hash of the public
	// request without its idempotency key, made by the edge before it
	// fills in defaults such as not_before = now), so that an honest
	// retry through any node matches and a reuse of the key for another
	// request is refused with a FieldError on idempotency_key. Empty:
	// no such check.
	Fingerprint []byte
}

// HoldArgs are the arguments of Ledger.Hold.
type HoldArgs struct {
	Write
	// ID names the reservation; empty lets the ledger assign one.
	ID     string
	Shape  Shape
	TTL    int64 // milliseconds; 0 means the ledger's default
	Labels map[string]string
	Commit bool // true for one-phase Reserve
}

// ModifyArgs are the arguments of Ledger.Modify.
type ModifyArgs struct {
	Write
	ID    string
	Shape Shape
	TTL   int64 // milliseconds; 0 means the ledger's default
}

// ListQuery filters Ledger.List. Zero fields match everything.
type ListQuery struct {
	Resource string
	Tenant   string
	States   []ledgerdv1.ReservationState
	From, To int64 // To == 0 means no upper bound
	// PageToken continues a previous List; Limit is the page size.
	PageToken string
	Limit     int
	Stale     bool
	// Series keeps the occurrences of one standing reservation.
	Series string
}

// FindResult is the answer of Ledger.Find.
type FindResult struct {
	Fits       bool
	Start      int64
	LaterOK    bool
	LaterStart int64
}

// CapacityArgs are the arguments of Ledger.UpdateCapacity. From == To == 0
// means "from now on, for good"; To == NoDeadline means open-ended.
type CapacityArgs struct {
	Write
	Name     string
	Capacity int64
	From, To int64
}

// PolicyArgs are the arguments of Ledger.SetPolicy. Zero MinSuccess and
// MaxPushes select the ledger's defaults.
type PolicyArgs struct {
	Write
	Name       string
	Policy     ledgerdv1.Policy
	MinSuccess uint32 // v* in permille, POLICY_RELAXED only
	MaxPushes  uint32 // POLICY_MOVE_VARIABLE only
}

// JobArgs are the arguments of Ledger.SubmitJob: a variable job of Amount
// units of Resource for Duration ms, planned at or after NotBefore (Unix
// ms, already at least now).
type JobArgs struct {
	Write
	ID        string // empty: the ledger assigns one
	Resource  string
	Amount    int64
	Duration  int64
	NotBefore int64
	Labels    map[string]string
}

// Ledger is the replicated reservation ledger as the API sees it. Writes are
// linearizable and exactly-once per idempotency key; reads are linearizable
// unless stale is set. Implementations must be safe for concurrent use and
// return the error values of this file (wrapped with %w is fine) for
// outcomes the API maps to specific codes; anything else becomes Internal,
// except the cluster sentinel errors the implementation translates to
// ErrUnavailable or ErrOutcomeUnknown.
type Ledger interface {
	// Hold admits a shape (and commits it when a.Commit) and returns the
	// reservation with the variable jobs the admission moved later.
	Hold(ctx context.Context, a HoldArgs) (*ledgerdv1.Reservation, []*ledgerdv1.MovedJob, error)
	// SubmitJob plans a variable job at its earliest slot.
	SubmitJob(ctx context.Context, a JobArgs) (*ledgerdv1.Reservation, error)
	// CoReserve books every sub-request on one of the candidates, or none.
	CoReserve(ctx context.Context, a CoReserveArgs) (*ledgerdv1.CoReserveResponse, error)
	Commit(ctx context.Context, w Write, id string) (*ledgerdv1.Reservation, error)
	Abort(ctx context.Context, w Write, id string) (*ledgerdv1.Reservation, error)
	Modify(ctx context.Context, a ModifyArgs) (*ledgerdv1.Reservation, error)
	Cancel(ctx context.Context, w Write, id string) (*ledgerdv1.Reservation, error)
	// Complete ends a committed or active reservation early at at (Unix
	// ms; 0 means the ledger's now) and releases the rest of its interval.
	Complete(ctx context.Context, w Write, id string, at int64) (*ledgerdv1.Reservation, error)

	Get(ctx context.Context, id string, stale bool) (*ledgerdv1.Reservation, error)
	// List returns one page of reservations matching q ordered by id and
	// the token of the next page ("" on the last one).
	List(ctx context.Context, q ListQuery) (rs []*ledgerdv1.Reservation, next string, err error)
	Find(ctx context.Context, s Shape) (FindResult, error)
	// Offers returns up to k feasible starts, earliest first.
	Offers(ctx context.Context, s Shape, k int) ([]int64, error)
	// Availability returns the resource and its free blocks over [from, to).
	Availability(ctx context.Context, resource string, from, to int64) (*ledgerdv1.Resource, []*ledgerdv1.FreeBlock, error)

	// History returns up to limit events at or after (version, index) in
	// (version, index) order, or ErrCompacted when some of them may have
	// been dropped from the retained history.
	History(ctx context.Context, version uint64, index uint32, limit int) ([]*ledgerdv1.Event, error)
	// Notify returns a channel closed once the applied version moves past
	// after (immediately if it already has).
	Notify(after uint64) <-chan struct{}
	// Version returns the last applied ledger version on this node.
	Version() uint64

	CreateResource(ctx context.Context, w Write, r *ledgerdv1.Resource) (*ledgerdv1.Resource, error)
	UpdateCapacity(ctx context.Context, a CapacityArgs) (*ledgerdv1.Resource, error)
	// SetPolicy changes a resource's admission policy.
	SetPolicy(ctx context.Context, a PolicyArgs) (*ledgerdv1.Resource, error)
	DeleteResource(ctx context.Context, w Write, name string, force bool) error
	Resources(ctx context.Context, stale bool) ([]*ledgerdv1.Resource, error)
}

// Cluster is the operator view of the Raft group.
type Cluster interface {
	Members(ctx context.Context) ([]*ledgerdv1.Member, error)
	Leader(ctx context.Context) (*ledgerdv1.LeaderResponse, error)
	TransferLeadership(ctx context.Context, target string) error
	RemoveServer(ctx context.Context, id string) error
	// SaveSnapshot writes a consistent snapshot to w and returns its version.
	SaveSnapshot(ctx context.Context, w io.Writer) (uint64, error)
	// RestoreSnapshot replaces the ledger with the snapshot read from r.
	RestoreSnapshot(ctx context.Context, r io.Reader) (uint64, error)
}

// Outcome errors a Ledger or Cluster returns; the API maps each to a code.
var (
	// ErrNotFound: no reservation or resource of that name (NotFound).
	ErrNotFound = errors.New("not found")
	// ErrExists: a resource of that name exists already (AlreadyExists).
	ErrExists = errors.New("already exists")
	// ErrWrongState: the reservation is not in a state that allows the
	// operation, e.g. Commit of an expired hold (FailedPrecondition).
	ErrWrongState = errors.New("wrong state")
	// ErrInUse: the resource still carries future bookings (FailedPrecondition).
	ErrInUse = errors.New("resource in use")
	// ErrUnavailable: no leader right now; safe to retry (Unavailable).
	ErrUnavailable = errors.New("unavailable")
	// ErrOutcomeUnknown: the write may or may not have happened; retry with
	// the same idempotency key (Unavailable).
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrPermission: the caller may not do this (PermissionDenied).
	ErrPermission = errors.New("permission denied")
	// ErrCompacted: the events asked for are no longer retained; the reader
	// must resynchronise with List (OutOfRange).
	ErrCompacted = errors.New("history compacted")
)

// ReasonNoCapacity is the Reason of a RejectedError for lack of capacity.
const ReasonNoCapacity = "NO_CAPACITY"

// RejectedError is an admission rejection: the shape does not fit inside its
// window. LaterOK/LaterStart give the earliest start that would fit ignoring
// the deadline.
type RejectedError struct {
	Reason     string // machine-readable, e.g. "NO_CAPACITY"
	Message    string
	LaterOK    bool
	LaterStart int64
}

// Error implements error.
func (e *RejectedError) Error() string {
	if e.LaterOK {
		return fmt.Sprintf("rejected (%s): %s; earliest start that would fit: %s", e.Reason, e.Message, time.UnixMilli(e.LaterStart).UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("rejected (%s): %s", e.Reason, e.Message)
}

// FieldError is a validation error naming the request field at fault.
type FieldError struct {
	Field  string // proto field path, e.g. "shape.parts[0].amount"
	Reason string
}

// Error implements error.
func (e *FieldError) Error() string { return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason) }
