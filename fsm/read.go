package fsm

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"github.com/ledgerd/ledgerd/planner"
	"google.golang.org/protobuf/proto"
)

// Read side. Every method is safe to call concurrently with Apply and with
// each other. Returned messages are copies the caller may keep and modify.

// Page sizes of List.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// AppliedIndex returns the log index of the last command applied. raft
// never hands barriers, no-ops (and, to Apply, configuration entries) to
// the FSM, so raft's own AppliedIndex may be ahead of it: a linearizable
// read waits on raft's index, and uses this one to version what it read.
func (f *FSM) AppliedIndex() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.index
}

// Now returns the log time (Unix ms) of the last applied entry.
func (f *FSM) Now() int64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.now
}

// Get returns the reservation id, including retained terminal ones.
func (f *FSM) Get(id string) (*fsmv1.Reservation, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.resv.get(id)
}

// Filter selects reservations for List. Zero fields match everything.
type Filter struct {
	// Resource keeps reservations with a part (or pending part) on it.
	Resource string
	// Owner keeps reservations of this owner.
	Owner string
	// States keeps reservations in one of these states.
	States []fsmv1.Reservation_State
	// FromMillis and ToMillis keep reservations whose interval intersects
	// [FromMillis, ToMillis); ToMillis 0 means unbounded.
	FromMillis, ToMillis int64
	// PageToken continues a previous List (its NextPageToken).
	PageToken string
	// PageSize is the maximum number of results; 0 means DefaultPageSize,
	// more than MaxPageSize is capped.
	PageSize int
	// Series keeps the occurrences of this series (IDs "<Series>@...").
	Series string
}

// List returns reservations matching flt, sorted by ID, one page at a
// time. nextToken is empty on the last page. A malformed page token is an
// error naming the field.
func (f *FSM) List(flt Filter) (out []*fsmv1.Reservation, nextToken string, err error) {
	after := ""
	if flt.PageToken != "" {
		b, derr := base64.RawURLEncoding.DecodeString(flt.PageToken)
		if derr != nil || len(b) == 0 {
			return nil, "", fmt.Errorf("page_token: %w", &planner.FieldError{Field: "page_token", Reason: "malformed"})
		}
		after = string(b)
	}
	if flt.PageSize < 0 {
		return nil, "", &planner.FieldError{Field: "page_size", Reason: "must be >= 0"}
	}
	if flt.ToMillis != 0 && flt.ToMillis <= flt.FromMillis {
		return nil, "", &planner.FieldError{Field: "to", Reason: "must be after from"}
	}
	size := flt.PageSize
	if size == 0 {
		size = DefaultPageSize
	}
	size = min(size, MaxPageSize)

	f.mu.RLock()
	defer f.mu.RUnlock()
	// Rows are filtered on their encoding; only the page is decoded.
	var sc rowScan
	prefix := ""
	if flt.Series != "" {
		// Occurrence IDs share their series' prefix: one range of the
		// sorted IDs.
		prefix = flt.Series + "@"
		after = max(after, prefix)
	}
	visit := func(row string) bool {
		id := rowID(row)
		if !strings.HasPrefix(id, prefix) {
			return false
		}
		if id == after {
			return true
		}
		if err := scanRow(row, &sc); err != nil {
			panic(fmt.Sprintf("fsm: stored reservation %q: %v", id, err))
		}
		if !matches(&sc, &flt) {
			return true
		}
		if len(out) == size {
			nextToken = base64.RawURLEncoding.EncodeToString([]byte(out[len(out)-1].GetId()))
			return false
		}
		out = append(out, decodeRow(row))
		return true
	}
	if after == "" {
		f.st.byID.Ascend(visit)
	} else {
		f.st.byID.AscendGreaterOrEqual(idPivot(after), visit)
	}
	return out, nextToken, nil
}

func matches(r *rowScan, flt *Filter) bool {
	if flt.Owner != "" && r.owner != flt.Owner {
		return false
	}
	if len(flt.States) > 0 && !slices.Contains(flt.States, r.state) {
		return false
	}
	if flt.Resource != "" && !r.books(flt.Resource) {
		return false
	}
	if r.end <= flt.FromMillis {
		return false
	}
	if flt.ToMillis != 0 && r.start >= flt.ToMillis {
		return false
	}
	return true
}

// clamp clamps a request's booking window to the log time, as Apply does.
func (s *state) clamp(req planner.Request) planner.Request {
	req.NotBefore = max(req.NotBefore, s.now)
	return req
}

// Find answers where req would be admitted now, without booking anything.
// NotBefore earlier than the log time is read as the log time.
func (f *FSM) Find(req planner.Request) (planner.Decision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// On resources with units, the earliest start that also maps.
	d, err := f.st.findMapped(f.st.clamp(req))
	if err != nil {
		return d, fmt.Errorf("find: %w", err)
	}
	return d, nil
}

// Offers returns up to k distinct feasible starts for req, ascending.
func (f *FSM) Offers(req planner.Request, k int) ([]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out, err := f.st.offersMapped(f.st.clamp(req), k)
	if err != nil {
		return nil, fmt.Errorf("offers: %w", err)
	}
	return out, nil
}

// Availability returns the free blocks of resource over [from, to); a from
// earlier than the log time is read as the log time (the past is not
// kept).
func (f *FSM) Availability(resource string, from, to int64) ([]planner.Block, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	from = max(from, f.st.now)
	if to <= from {
		if _, ok := f.st.resources[resource]; !ok {
			return nil, fmt.Errorf("availability: resource %q: %w", resource, planner.ErrUnknownResource)
		}
		return []planner.Block{}, nil
	}
	b, err := f.st.plan.Availability(resource, from, to)
	if err != nil {
		return nil, fmt.Errorf("availability: %w", err)
	}
	return b, nil
}

// Resources returns the resource table sorted by name.
func (f *FSM) Resources() []*fsmv1.Resource {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]*fsmv1.Resource, 0, len(f.st.resources))
	for _, n := range slices.Sorted(maps.Keys(f.st.resources)) {
		out = append(out, proto.CloneOf(f.st.resources[n]))
	}
	return out
}

// Resource returns one resource.
func (f *FSM) Resource(name string) (*fsmv1.Resource, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, ok := f.st.resources[name]
	if !ok {
		return nil, false
	}
	return proto.CloneOf(r), true
}

// ResourceStats is the state of one resource at the log time.
type ResourceStats struct {
	// Name is the resource.
	Name string
	// Capacity and InUse are the total and booked units at the log time.
	Capacity, InUse int64
	// Utilization is InUse/Capacity (0 without capacity).
	Utilization float64
}

// Stats summarises the tables for metrics.
type Stats struct {
	// AppliedIndex is the index of the last applied command.
	AppliedIndex uint64
	// NowMillis is the log time of the last applied command.
	NowMillis int64
	// ByState counts retained reservations per state.
	ByState map[fsmv1.Reservation_State]int
	// HoldsOutstanding counts HELD reservations plus pending modifications.
	HoldsOutstanding int
	// PendingModifications counts pending (held, uncommitted) modifications.
	PendingModifications int
	// Bookings is the number of live planner bookings (reservations plus
	// pending modifications).
	Bookings int
	// IdempotencyKeys is the number of remembered idempotency keys.
	IdempotencyKeys int
	// HistoryLen is the number of retained events.
	HistoryLen int
	// Resources has one entry per resource, sorted by name.
	Resources []ResourceStats
}

// Stats returns counters and per-resource utilization at the log time.
func (f *FSM) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.st
	out := Stats{
		AppliedIndex:         s.index,
		NowMillis:            s.now,
		ByState:              maps.Clone(s.byState),
		HoldsOutstanding:     s.byState[fsmv1.Reservation_STATE_HELD] + s.pendingMods,
		PendingModifications: s.pendingMods,
		Bookings:             s.plan.Len(),
		IdempotencyKeys:      s.idem.len(),
		HistoryLen:           len(s.history),
	}
	from := max(s.now, s.plan.Origin())
	for _, n := range slices.Sorted(maps.Keys(s.resources)) {
		rs := ResourceStats{Name: n}
		if from < planner.MaxTime {
			if u, err := s.plan.Usage(n, from, from+1); err == nil {
				rs.Capacity, rs.InUse = u.CapacityArea, u.BookedArea
				rs.Utilization = u.Utilization()
			}
		}
		out.Resources = append(out.Resources, rs)
	}
	return out
}

// Sizes returns the number of live planner bookings and of remembered
// idempotency keys: what a restore's log line reports of the state it
// restored, without Stats' per-resource work.
func (f *FSM) Sizes() (bookings, idempotencyKeys int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.plan.Len(), f.st.idem.len()
}

// History returns up to limit events with Version >= from, oldest first.
// Events of one log entry are never split across calls: a page ends at an
// entry boundary (the first entry is returned whole even when it alone
// exceeds limit), so a reader resumes with from = last Version + 1.
// limit <= 0 means no limit. Events older than OldestVersion are gone.
func (f *FSM) History(from uint64, limit int) []*fsmv1.Event {
	f.mu.RLock()
	defer f.mu.RUnlock()
	h := f.st.history
	i := sort.Search(len(h), func(i int) bool { return h[i].GetVersion() >= from })
	j := len(h)
	if limit > 0 && j-i > limit {
		j = i + limit
		// Extend or cut to an entry boundary.
		last := h[j-1].GetVersion()
		if h[j].GetVersion() == last {
			k := j
			for k > i && h[k-1].GetVersion() == last {
				k--
			}
			if k > i {
				j = k
			} else {
				for j < len(h) && h[j].GetVersion() == last {
					j++
				}
			}
		}
	}
	out := make([]*fsmv1.Event, 0, j-i)
	for _, e := range h[i:j] {
		out = append(out, proto.CloneOf(e))
	}
	return out
}

// HistoryLimit returns the number of events the history retains (the
// configured limit after defaults). Once the history has held that many,
// events older than OldestVersion may have been dropped.
func (f *FSM) HistoryLimit() int { return f.cfg.HistoryLimit }

// OldestVersion returns the version of the oldest retained event (0 when
// the history is empty). A reader asking for older versions has missed
// events and must resynchronise from a List.
func (f *FSM) OldestVersion() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if len(f.st.history) == 0 {
		return 0
	}
	return f.st.history[0].GetVersion()
}
