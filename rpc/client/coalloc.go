package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// SiteRequest is one site's share of a co-allocation: Parts booked on the
// ledgerd cluster reached through Client.
type SiteRequest struct {
	// Site names the site; unique within a CoRequest.
	Site string
	// Client talks to the site's cluster.
	Client *Client
	// Parts booked at this site.
	Parts []*ledgerdv1.ResourceAmount
	// Labels stored with this site's reservation.
	Labels map[string]string
}

// CoRequest asks for one common interval of Duration on every site, with a
// start in [NotBefore, Deadline-Duration].
type CoRequest struct {
	Sites    []SiteRequest
	Duration time.Duration
	// NotBefore is the earliest start; zero means now.
	NotBefore time.Time
	// Deadline is the latest end; zero means none.
	Deadline time.Time
	// HoldTTL is how long the phase-one holds live (default 30s): the
	// safety net that releases capacity if the broker dies mid-protocol.
	HoldTTL time.Duration
	// Key is the base of every idempotency key this co-allocation uses;
	// empty means a fresh random one.
	Key string
	// MaxRounds bounds how often the protocol starts over after losing a
	// race for the agreed start to another broker (default 8).
	MaxRounds int
}

// CoAllocation is a successful co-allocation: every site committed at Start.
type CoAllocation struct {
	Start, End time.Time
	// Reservations by site name, all COMMITTED.
	Reservations map[string]*ledgerdv1.Reservation
}

// CoAllocError reports a failed co-allocation and what was cleaned up.
type CoAllocError struct {
	// Phase is "negotiate", "hold" or "commit".
	Phase string
	// Site whose failure ended the attempt, and its error.
	Site string
	Err  error
	// Released lists sites whose hold was aborted or whose commitment was
	// cancelled during the cleanup.
	Released []string
	// Stranded maps site → reservation id where the cleanup itself failed.
	// A stranded hold dies at its TTL; a stranded commitment (possible
	// only in the commit phase) must be cancelled by the caller.
	Stranded map[string]string
}

// Error implements error.
func (e *CoAllocError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "co-allocation failed in %s phase at site %q: %v", e.Phase, e.Site, e.Err)
	if len(e.Released) > 0 {
		fmt.Fprintf(&b, "; released at %s", strings.Join(e.Released, ","))
	}
	if len(e.Stranded) > 0 {
		sites := make([]string, 0, len(e.Stranded))
		for s, id := range e.Stranded {
			sites = append(sites, s+"="+id)
		}
		slices.Sort(sites)
		fmt.Fprintf(&b, "; NOT released (holds expire by TTL): %s", strings.Join(sites, ","))
	}
	return b.String()
}

// Unwrap returns the site's error, so errors.As finds its Connect code and
// rejection details.
func (e *CoAllocError) Unwrap() error { return e.Err }

// Test hooks: when set, they run right before the hold phase and right
// before the commit phase.
var testHookBeforeHold, testHookBeforeCommit func()

// CoAllocate books req on every site at one common start with the
// hold → commit / abort protocol (HARC, PluS):
//
//  1. Negotiate: ask every site (Find) for its earliest start at or after t,
//     set t to the latest answer, and repeat until all sites agree. Starts
//     only move forward, so this ends; a site without room in the window
//     ends it with that site's rejection.
//  2. Hold the exact agreed start on every site, in parallel.
//  3. If any hold fails, abort every hold that succeeded. If a hold was
//     rejected because another broker took the slot meanwhile, start over
//     from 1 (at most MaxRounds rounds); any other failure is returned.
//  4. Otherwise commit on every site, in parallel.
//  5. If a commit fails (its hold expired, the site went away), cancel
//     the sites that committed and abort the rest, and return the failure.
//
// Guarantees:
//   - No site is committed unless every site held its part first: a failure
//     before step 4 leaves no commitment anywhere.
//   - Holds that cannot be aborted (site unreachable) are released by their
//     TTL, so an interrupted broker never blocks capacity for longer than
//     HoldTTL.
//   - Every write carries an idempotency key derived from Key, site and
//     round, and the Client retries Unavailable errors with it, so each
//     step takes effect at most once per site.
//   - The commit phase is not atomic across independent clusters. If the
//     commits race a hold's expiry, some sites may commit while others
//     cannot; they are then compensated by Cancel, and any site where that
//     also fails is reported in CoAllocError.Stranded. Keep HoldTTL well
//     above the expected commit latency.
func CoAllocate(ctx context.Context, req CoRequest) (*CoAllocation, error) {
	if len(req.Sites) == 0 {
		return nil, errors.New("coalloc: at least one site is required")
	}
	seen := map[string]bool{}
	for i, s := range req.Sites {
		switch {
		case s.Site == "":
			return nil, fmt.Errorf("coalloc: sites[%d].site: required", i)
		case seen[s.Site]:
			return nil, fmt.Errorf("coalloc: sites[%d].site: %q listed twice", i, s.Site)
		case s.Client == nil:
			return nil, fmt.Errorf("coalloc: sites[%d].client: required", i)
		case len(s.Parts) == 0:
			return nil, fmt.Errorf("coalloc: sites[%d].parts: at least one part is required", i)
		}
		seen[s.Site] = true
	}
	if req.Duration <= 0 {
		return nil, errors.New("coalloc: duration: must be > 0")
	}
	if req.HoldTTL <= 0 {
		req.HoldTTL = 30 * time.Second
	}
	if req.MaxRounds <= 0 {
		req.MaxRounds = 8
	}
	if req.Key == "" {
		req.Key = "coalloc-" + NewKey()
	}
	t := req.NotBefore
	if t.IsZero() {
		t = time.Now()
	}
	var lastErr error
	for round := 0; round < req.MaxRounds; round++ {
		start, err := negotiate(ctx, req, t)
		if err != nil {
			return nil, err
		}
		if testHookBeforeHold != nil {
			testHookBeforeHold()
		}
		holds, err := holdAll(ctx, req, round, start)
		if err != nil {
			var ce *CoAllocError
			if errors.As(err, &ce) && connect.CodeOf(ce.Err) == connect.CodeFailedPrecondition && len(ce.Stranded) == 0 {
				// Lost the slot to a concurrent booking: negotiate again.
				lastErr, t = err, start
				continue
			}
			return nil, err
		}
		if testHookBeforeCommit != nil {
			testHookBeforeCommit()
		}
		return commitAll(ctx, req, round, start, holds)
	}
	return nil, fmt.Errorf("coalloc: gave up after %d rounds: %w", req.MaxRounds, lastErr)
}

// shapeAt builds a site's shape; exact is the agreed start or nil.
func shapeAt(req CoRequest, s SiteRequest, notBefore time.Time, exact *time.Time) *ledgerdv1.Shape {
	sh := &ledgerdv1.Shape{Parts: s.Parts, Duration: durationpb.New(req.Duration)}
	if exact != nil {
		sh.ExactStart = timestamppb.New(*exact)
		return sh
	}
	sh.NotBefore = timestamppb.New(notBefore)
	if !req.Deadline.IsZero() {
		sh.Deadline = timestamppb.New(req.Deadline)
	}
	return sh
}

// forEach runs fn for every site in parallel and returns the results by
// index.
func forEach[T any](req CoRequest, fn func(SiteRequest) (T, error)) ([]T, []error) {
	out := make([]T, len(req.Sites))
	errs := make([]error, len(req.Sites))
	var wg sync.WaitGroup
	for i, s := range req.Sites {
		wg.Go(func() { out[i], errs[i] = fn(s) })
	}
	wg.Wait()
	return out, errs
}

// negotiate finds the earliest start >= t at which every site fits.
func negotiate(ctx context.Context, req CoRequest, t time.Time) (time.Time, error) {
	// Starts only move forward and every site answers with its earliest
	// start, so agreement normally comes within a few rounds; the bound
	// guards against sites whose schedules keep changing under us.
	const maxSteps = 64
	for step := 0; ; step++ {
		if step == maxSteps {
			return time.Time{}, &CoAllocError{Phase: "negotiate", Err: connect.NewError(connect.CodeAborted, fmt.Errorf("sites did not agree on a start after %d queries", maxSteps))}
		}
		answers, errs := forEach(req, func(s SiteRequest) (*ledgerdv1.FindResponse, error) {
			return s.Client.Find(ctx, shapeAt(req, s, t, nil))
		})
		latest := t
		agree := true
		for i, a := range answers {
			if errs[i] != nil {
				return time.Time{}, &CoAllocError{Phase: "negotiate", Site: req.Sites[i].Site, Err: errs[i]}
			}
			if !a.Fits {
				return time.Time{}, &CoAllocError{Phase: "negotiate", Site: req.Sites[i].Site, Err: noRoom(req.Sites[i].Site, a.LaterStart)}
			}
			st := a.Start.AsTime()
			if !st.Equal(t) {
				agree = false
			}
			if st.After(latest) {
				latest = st
			}
		}
		if agree {
			return t, nil
		}
		t = latest
	}
}

// holdAll holds the agreed start everywhere, aborting every hold if one fails.
func holdAll(ctx context.Context, req CoRequest, round int, start time.Time) ([]*ledgerdv1.Reservation, error) {
	holds, errs := forEach(req, func(s SiteRequest) (*ledgerdv1.Reservation, error) {
		return s.Client.Hold(ctx, &ledgerdv1.HoldRequest{
			Shape:          shapeAt(req, s, start, &start),
			HoldTtl:        durationpb.New(req.HoldTTL),
			Labels:         s.Labels,
			IdempotencyKey: fmt.Sprintf("%s/r%d/hold/%s", req.Key, round, s.Site),
		})
	})
	failed := slices.IndexFunc(errs, func(e error) bool { return e != nil })
	if failed < 0 {
		return holds, nil
	}
	ce := &CoAllocError{Phase: "hold", Site: req.Sites[failed].Site, Err: errs[failed]}
	release(ctx, req, round, holds, nil, ce)
	return nil, ce
}

// release aborts the holds and cancels the commitments given (by index)
// and records the outcome in ce.
func release(ctx context.Context, req CoRequest, round int, holds []*ledgerdv1.Reservation, committed []bool, ce *CoAllocError) {
	// Cleanup must run even if the caller's context is done.
	ctx = context.WithoutCancel(ctx)
	_, errs := forEach(req, func(s SiteRequest) (struct{}, error) {
		i := slices.IndexFunc(req.Sites, func(x SiteRequest) bool { return x.Site == s.Site })
		if holds[i] == nil {
			return struct{}{}, nil
		}
		var err error
		if committed != nil && committed[i] {
			_, err = s.Client.Cancel(ctx, holds[i].Id, fmt.Sprintf("%s/r%d/cancel/%s", req.Key, round, s.Site))
		} else {
			_, err = s.Client.Abort(ctx, holds[i].Id, fmt.Sprintf("%s/r%d/abort/%s", req.Key, round, s.Site))
			if connect.CodeOf(err) == connect.CodeFailedPrecondition {
				// Not a hold any more: expired or aborted (released all
				// the same), or committed by a commit whose answer was
				// lost, which must be cancelled.
				var r *ledgerdv1.Reservation
				if r, err = s.Client.Get(ctx, holds[i].Id); err == nil {
					switch r.State {
					case ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED, ledgerdv1.ReservationState_RESERVATION_STATE_ACTIVE:
						_, err = s.Client.Cancel(ctx, holds[i].Id, fmt.Sprintf("%s/r%d/cancel/%s", req.Key, round, s.Site))
					}
				}
			}
		}
		return struct{}{}, err
	})
	for i, s := range req.Sites {
		if holds[i] == nil {
			continue
		}
		if errs[i] != nil {
			if ce.Stranded == nil {
				ce.Stranded = map[string]string{}
			}
			ce.Stranded[s.Site] = holds[i].Id
			continue
		}
		ce.Released = append(ce.Released, s.Site)
	}
}

// commitAll commits every hold, compensating if one commit fails.
func commitAll(ctx context.Context, req CoRequest, round int, start time.Time, holds []*ledgerdv1.Reservation) (*CoAllocation, error) {
	out, errs := forEach(req, func(s SiteRequest) (*ledgerdv1.Reservation, error) {
		i := slices.IndexFunc(req.Sites, func(x SiteRequest) bool { return x.Site == s.Site })
		return s.Client.Commit(ctx, holds[i].Id, fmt.Sprintf("%s/r%d/commit/%s", req.Key, round, s.Site))
	})
	failed := slices.IndexFunc(errs, func(e error) bool { return e != nil })
	if failed < 0 {
		res := &CoAllocation{Start: start, End: start.Add(req.Duration), Reservations: map[string]*ledgerdv1.Reservation{}}
		for i, s := range req.Sites {
			res.Reservations[s.Site] = out[i]
		}
		return res, nil
	}
	committed := make([]bool, len(holds))
	for i := range errs {
		committed[i] = errs[i] == nil
	}
	ce := &CoAllocError{Phase: "commit", Site: req.Sites[failed].Site, Err: errs[failed]}
	release(ctx, req, round, holds, committed, ce)
	return nil, ce
}

// noRoom is the rejection of a site without room in the window, shaped like
// a server's (FailedPrecondition with a ledgerd.v1.Rejection detail) so
// callers handle both alike.
func noRoom(site string, later *timestamppb.Timestamp) error {
	msg := fmt.Sprintf("no room in the window at site %q", site)
	if later != nil {
		msg += fmt.Sprintf(" (earliest start ignoring the deadline: %s)", later.AsTime().UTC().Format(time.RFC3339))
	}
	e := connect.NewError(connect.CodeFailedPrecondition, errors.New(msg))
	if d, err := connect.NewErrorDetail(&ledgerdv1.Rejection{Reason: "NO_CAPACITY", Message: msg, EarliestStart: later}); err == nil {
		e.AddDetail(d)
	}
	return e
}
