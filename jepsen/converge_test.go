package jepsen

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestConvergeReportsDivergedReplicas: replicas that every read finds
// different, the last read cut short by the deadline, are judged on the
// last reading in which every node answered, so replicas-identical names
// the reservation they disagree on. Replicas that agree are returned at
// once; a cluster that never answered whole keeps the read error.
func TestConvergeReportsDivergedReplicas(t *testing.T) {
	diverged := map[string][]Reservation{
		"n1": {{ID: "a", ServerID: "r-1", Status: StatusCommitted}},
		"n2": {{ID: "a", ServerID: "r-1", Status: StatusCommitted}, {ID: "b", ServerID: "r-2", Status: StatusCommitted}},
	}
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		read := func(ctx context.Context) (map[string][]Reservation, error) {
			if d, ok := ctx.Deadline(); ok && time.Until(d) < time.Second {
				// The reading the deadline cuts short.
				return map[string][]Reservation{}, fmt.Errorf("read n1: %w", context.DeadlineExceeded)
			}
			return diverged, nil
		}
		lists, _, err := converge(ctx, 2, read)
		if err == nil || !strings.Contains(err.Error(), "every node answered") {
			t.Fatalf("converge error %v, want one saying the replicas answered but differ", err)
		}
		if len(lists) != 2 {
			t.Fatalf("converge returned %d lists, want the last whole reading of 2", len(lists))
		}
		inv := CheckInvariants(History{}, lists, InvariantOptions{})
		for _, r := range inv {
			if r.Name == "replicas-identical" {
				if r.OK || r.Checked != 1 || !strings.Contains(strings.Join(r.Violations, " "), "r-2") {
					t.Fatalf("replicas-identical on the returned reading: %+v", r)
				}
				return
			}
		}
		t.Fatal("no replicas-identical result")
	})
	synctest.Test(t, func(t *testing.T) {
		same := map[string][]Reservation{"n1": diverged["n1"], "n2": diverged["n1"]}
		calls := 0
		lists, _, err := converge(context.Background(), 2, func(context.Context) (map[string][]Reservation, error) {
			calls++
			if calls == 1 {
				return diverged, nil
			}
			return same, nil
		})
		if err != nil || calls != 2 || len(lists["n2"]) != 1 {
			t.Fatalf("converge after one differing read: %d calls, %v", calls, err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		broken := errors.New("read n2: connection refused")
		_, _, err := converge(ctx, 2, func(context.Context) (map[string][]Reservation, error) {
			return map[string][]Reservation{"n1": nil}, broken
		})
		if !errors.Is(err, broken) {
			t.Fatalf("converge on a cluster never read whole: %v, want the read error", err)
		}
	})
}
