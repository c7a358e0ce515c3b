package jepsen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// The recurring workload books standing reservations (issue #20) while
// the nemeses break the cluster, and checks afterwards that every
// occurrence was booked exactly once and none is missing.
//
// Occurrences only come into being as time passes, and a run lasts
// seconds, so each endless series is made to need the leader's tick
// during the run: an hourly series (BYMINUTE=0) whose horizon is chosen
// so that its first occurrence enters the horizon RecurringLead after
// the series is created. Its creation books nothing; the leader's tick
// books that occurrence, under whatever faults are running then (leader
// kills, partitions, pauses), from the watermark in the replicated state.
// Bounded series (COUNT=3) are booked whole when created. Every series
// books 1 unit of a resource of its own with ample capacity, so any
// occurrence that is not booked, or is tried twice (refused as a
// duplicate ID and counted as skipped), is a bug, not contention.

// RecurringLead is how long after its creation an endless series'
// first occurrence enters its horizon.
const RecurringLead = 5 * time.Second

// recurringTickSlack is how long the leader's tick has, after the first
// occurrence enters the horizon, to book it before it starts, and how
// long after that the check expects it booked: an election under the
// nemeses takes seconds, and an occurrence the tick reaches only once it
// started is passed over, as it should be.
const recurringTickSlack = 8 * time.Second

// recurringTZ are zones with whole-hour offsets, so that BYMINUTE=0 is
// a full hour in UTC too.
var recurringTZ = []string{"UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo"}

// recurringSeries is one series the workload tried to create.
type recurringSeries struct {
	ID      string
	Endless bool
	// Created is the harness's clock before the first attempt; First is
	// the start of the first occurrence (endless series: the one that
	// enters the horizon at Created + RecurringLead).
	Created, First time.Time
	// Acked: a definite OK; Unknown: no definite answer (it may exist).
	Acked, Unknown bool
}

// Recurring is the standing-reservation workload of a campaign.
type Recurring struct {
	cl       *Cluster
	prefix   string
	resource string
	rng      *rand.Rand
	every    time.Duration

	mu     sync.Mutex
	series []*recurringSeries
}

// NewRecurring returns the workload for cluster cl; prefix names its
// resource and series, seed its choices.
func NewRecurring(cl *Cluster, prefix string, seed uint64) *Recurring {
	return &Recurring{cl: cl, prefix: prefix, resource: prefix + "-series", rng: rand.New(rand.NewPCG(seed, 20)), every: 700 * time.Millisecond}
}

// Setup creates the workload's resource.
func (r *Recurring) Setup(ctx context.Context) error {
	return r.cl.connect(r.cl.Names()[0]).EnsureResource(ctx, r.resource, 1_000_000)
}

// Run creates a series every 700 ms through a random running node until
// ctx ends.
func (r *Recurring) Run(ctx context.Context) {
	t := time.NewTicker(r.every)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.create(ctx, n)
	}
}

// create makes series n, retrying an indeterminate answer with the same
// idempotency key (up to 3 attempts, on any running node).
func (r *Recurring) create(ctx context.Context, n int) {
	s := &recurringSeries{ID: fmt.Sprintf("%s-s%d", r.prefix, n), Created: time.Now()}
	endless := r.rng.IntN(3) != 0
	tz := recurringTZ[r.rng.IntN(len(recurringTZ))]
	req := &ledgerdv1.ReserveSeriesRequest{Id: s.ID, Parts: []*ledgerdv1.ResourceAmount{{Resource: r.resource, Amount: 1}},
		Duration: durationpb.New(30 * time.Minute), Tz: tz, IdempotencyKey: "jepsen-" + s.ID,
		Conflicts: ledgerdv1.SeriesConflictMode_SERIES_CONFLICT_MODE_SKIP_CONFLICTS}
	var horizon time.Duration
	s.Endless, s.First, req.Repeat, horizon = recurringShape(s.Created, endless)
	if s.Endless {
		req.Horizon = durationpb.New(horizon)
	}
	r.mu.Lock()
	r.series = append(r.series, s)
	r.mu.Unlock()
	names := r.cl.Names()
	for attempt := 0; attempt < 3 && ctx.Err() == nil; attempt++ {
		node := names[r.rng.IntN(len(names))]
		if !r.cl.Running(node) {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, opTimeout)
		_, err := r.cl.connect(node).ser.ReserveSeries(cctx, connect.NewRequest(req))
		cancel()
		r.mu.Lock()
		switch {
		case err == nil:
			s.Acked, s.Unknown = true, false
		case definiteRefusal(err):
			s.Unknown = false
		default:
			s.Unknown = true
		}
		done := !s.Unknown
		r.mu.Unlock()
		if done {
			return
		}
	}
}

// recurringShape is the series the workload creates at created: an
// endless hourly one whose first occurrence, first, enters its horizon
// RecurringLead after created, when endless is asked for and the next
// hour starts at least recurringTickSlack after that (an hour that starts
// earlier would be booked by the creation itself, or leave the tick too
// little time); otherwise a bounded one of 3, whose first hour (at or
// after created) is first.
func recurringShape(created time.Time, endless bool) (isEndless bool, first time.Time, repeat string, horizon time.Duration) {
	first = created.Truncate(time.Hour)
	if first.Before(created) {
		first = first.Add(time.Hour)
	}
	enter := created.Add(RecurringLead)
	if endless && !first.Before(enter.Add(recurringTickSlack)) {
		return true, first, "FREQ=HOURLY;BYMINUTE=0", first.Sub(enter)
	}
	return false, first, "FREQ=HOURLY;BYMINUTE=0;COUNT=3", 0
}

// definiteRefusal reports whether err says that nothing was written.
func definiteRefusal(err error) bool {
	switch connect.CodeOf(err) {
	case connect.CodeInvalidArgument, connect.CodeFailedPrecondition, connect.CodeAlreadyExists,
		connect.CodePermissionDenied, connect.CodeUnauthenticated, connect.CodeNotFound:
		return true
	}
	return false
}

// Check judges the series against the converged lists (read at readAt)
// and the series rows of node:
//
//   - series-exactly-once: no series skipped an occurrence (a second
//     booking of an occurrence is refused as a duplicate and counted
//     there), its booked count equals its rows, and its rows are
//     consecutive hours;
//   - series-nothing-missing: every acknowledged series exists; a
//     bounded one has its 3 occurrences; an endless one created at least
//     RecurringLead + settle before the read has its first occurrence,
//     booked by a leader's tick, unless log time may have reached that
//     occurrence early, ahead of the wall clock after a forward jump of
//     the leader's clock (ahead, see aheadOfWall and mayPassOver): the
//     tick then rightly passes over an occurrence that has started in
//     log time, though not yet on the wall clock.
func (r *Recurring) Check(ctx context.Context, node string, lists map[string][]Reservation, readAt time.Time, ahead []AheadWindow) []InvariantResult {
	once := &invCollector{res: InvariantResult{Name: "series-exactly-once", OK: true}, max: 10}
	missing := &invCollector{res: InvariantResult{Name: "series-nothing-missing", OK: true}, max: 10}
	r.mu.Lock()
	series := slices.Clone(r.series)
	r.mu.Unlock()
	var rows []Reservation
	for _, l := range lists {
		rows = l // replicas-identical judges the others
		break
	}
	if node == "" || len(lists) == 0 {
		missing.fail("no converged replica to read")
		return []InvariantResult{once.done(), missing.done()}
	}
	byID := map[string][]Reservation{}
	for _, row := range rows {
		if id, _, ok := strings.Cut(row.ServerID, "@"); ok && strings.HasPrefix(id, r.prefix+"-s") {
			byID[id] = append(byID[id], row)
		}
	}
	client := r.cl.connect(node)
	for _, s := range series {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := client.ser.GetSeries(cctx, connect.NewRequest(&ledgerdv1.GetSeriesRequest{Id: s.ID, Stale: true}))
		cancel()
		occ := byID[s.ID]
		if connect.CodeOf(err) == connect.CodeNotFound {
			missing.res.Checked++
			if s.Acked {
				missing.fail("%s: acknowledged but does not exist", s.ID)
			}
			if len(occ) > 0 {
				once.fail("%s: %d occurrences of a series that does not exist", s.ID, len(occ))
			}
			continue
		}
		if err != nil {
			missing.fail("%s: get series: %v", s.ID, err)
			continue
		}
		got := resp.Msg.GetSeries()
		once.res.Checked++
		if got.GetSkipped() != 0 {
			once.fail("%s: %d occurrences could not be booked (tried twice?)", s.ID, got.GetSkipped())
		}
		// The leader's tick keeps booking endless series while this runs:
		// the lists were read before GetSeries and this series' rows are
		// read again after it, so the series' count must lie between the
		// two (each occurrence booked once, none lost).
		after, err := listSeries(ctx, client, s.ID)
		if err != nil {
			missing.fail("%s: list series: %v", s.ID, err)
			continue
		}
		if b := int(got.GetBooked()); b < len(occ) || b > len(after) {
			once.fail("%s: booked %d, %d rows before and %d after reading it", s.ID, b, len(occ), len(after))
		}
		occ = after
		slices.SortFunc(occ, func(a, b Reservation) int { return int(a.Start - b.Start) })
		for i := 1; i < len(occ); i++ {
			if occ[i].Start-occ[i-1].Start != time.Hour.Milliseconds() {
				once.fail("%s: occurrences %s and %s are not an hour apart", s.ID, occ[i-1].ServerID, occ[i].ServerID)
			}
		}
		missing.res.Checked++
		excused := s.Endless && mayPassOver(ahead, s.Created, s.First)
		if excused {
			missing.res.Excused++
			missing.res.ExcusedWhy = "endless series whose first hour log time may have reached early, ahead of the wall clock after a forward clock jump"
		}
		switch {
		case !s.Endless && len(occ) != 3:
			missing.fail("%s: COUNT=3 series has %d occurrences", s.ID, len(occ))
		case s.Endless && readAt.Sub(s.Created) >= RecurringLead+recurringTickSlack && !excused:
			if len(occ) == 0 || occ[0].Start != s.First.UnixMilli() {
				missing.fail("%s: the occurrence at %s (in the horizon since %s) was not booked by a tick (%d rows, decided through %q)",
					s.ID, s.First.UTC().Format(time.RFC3339), s.Created.Add(RecurringLead).UTC().Format(time.RFC3339Nano), len(occ), got.GetDecidedThrough())
			}
		}
	}
	return []InvariantResult{once.done(), missing.done()}
}

// AheadWindow is a wall-clock interval in which log time may run up to
// Ahead in front of the wall clock.
type AheadWindow struct {
	From, Until time.Time
	Ahead       time.Duration
}

// mayPassOver reports whether a window lets log time reach first, the
// series' first hour, before the tick had to book it: the check expects
// the booking by created + RecurringLead + recurringTickSlack, so the
// series is at risk when log time, up to Ahead in front of the wall
// clock inside the window, can reach first at some wall-clock instant
// from created to that deadline. The tick then passes the hour over, as
// it should for an hour that has started. A series booked before the
// jump is not at risk.
func mayPassOver(ws []AheadWindow, created, first time.Time) bool {
	deadline := created.Add(RecurringLead + recurringTickSlack)
	for _, w := range ws {
		from, until := w.From, w.Until
		if from.Before(created) {
			from = created
		}
		if until.After(deadline) {
			until = deadline
		}
		if from.After(until) {
			continue
		}
		if !until.Add(w.Ahead).Before(first) {
			return true
		}
	}
	return false
}

// aheadOfWall returns the windows in which log time may run ahead of the
// wall clock: from each forward jump of the leader's clock (faults, timed
// from start) until the wall clock has caught up with what the jump
// stamped, the jump's End plus its offset. Backward jumps do not move log
// time, which never runs backwards.
func aheadOfWall(faults []Fault, start time.Time) []AheadWindow {
	var out []AheadWindow
	for _, f := range faults {
		if f.ClockOffset > 0 {
			out = append(out, AheadWindow{
				From:  start.Add(time.Duration(f.Start)),
				Until: start.Add(time.Duration(f.End) + f.ClockOffset),
				Ahead: f.ClockOffset,
			})
		}
	}
	return out
}

// Created counts the series tried and acknowledged.
func (r *Recurring) Created() (tried, acked int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.series {
		if s.Acked {
			acked++
		}
	}
	return len(r.series), acked
}

// listSeries reads the occurrences of series id on the client's node
// (a stale read of its local state, like the final lists).
func listSeries(ctx context.Context, c *ConnectClient, id string) ([]Reservation, error) {
	var out []Reservation
	token := ""
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := c.res.List(cctx, connect.NewRequest(&ledgerdv1.ListRequest{SeriesId: id, PageSize: 1000, PageToken: token, Stale: true}))
		cancel()
		if err != nil {
			return nil, err
		}
		for _, r := range resp.Msg.GetReservations() {
			out = append(out, fromProto(r))
		}
		if token = resp.Msg.GetNextPageToken(); token == "" {
			return out, nil
		}
	}
}
