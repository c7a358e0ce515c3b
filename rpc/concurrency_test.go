package rpc_test

import (
	"context"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// TestConcurrentBrokersNeverOverbook races brokers through the API with
// random holds, commits, aborts, reserves and cancels (some retried with
// their idempotency key) and then checks invariant 1 from outside: the
// live bookings never exceed capacity at any instant, and Availability
// equals capacity minus the booked profile.
func TestConcurrentBrokersNeverOverbook(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("LEDGERD_TEST_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("LEDGERD_TEST_SEED: %v", err)
		}
		seed = n
	}
	t.Logf("seed %d (replay the operations with LEDGERD_TEST_SEED=%d)", seed, seed)
	s, _ := newSite(t, agenttest.Options{Servers: 2})
	ctx := context.Background()
	const brokers, ops, capacity = 6, 25, 8
	var wg sync.WaitGroup
	for b := range brokers {
		r := rand.New(rand.NewPCG(seed, uint64(b)))
		token := agenttest.TokenAcme
		if b%2 == 1 {
			token = agenttest.TokenGlobex
		}
		c, err := client.New(s.Addrs, client.Options{Token: token})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			var mine []string
			for range ops {
				sh := shape("gpu", 1+r.Int64N(5), time.Duration(1+r.IntN(4))*time.Hour, time.Duration(r.IntN(12))*time.Hour, 0)
				if r.IntN(3) == 0 {
					sh.Deadline = ts(sh.NotBefore.AsTime().Sub(t0) + sh.Duration.AsDuration() + time.Duration(r.IntN(3))*time.Hour)
				}
				switch op := r.IntN(5); {
				case op <= 1:
					key := client.NewKey()
					res, err := c.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: sh, IdempotencyKey: key})
					if err == nil {
						mine = append(mine, res.Id)
						// A retry with the same key returns the same booking.
						again, err := c.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: sh, IdempotencyKey: key})
						if err != nil || again.Id != res.Id {
							t.Errorf("retry of %s: %v %v", res.Id, again, err)
						}
					} else if connect.CodeOf(err) != connect.CodeFailedPrecondition {
						t.Errorf("reserve: %v", err)
					}
				case op == 2:
					res, err := c.Hold(ctx, &ledgerdv1.HoldRequest{Shape: sh})
					if err != nil {
						if connect.CodeOf(err) != connect.CodeFailedPrecondition {
							t.Errorf("hold: %v", err)
						}
						continue
					}
					if r.IntN(2) == 0 {
						if _, err := c.Commit(ctx, res.Id, ""); err != nil {
							t.Errorf("commit: %v", err)
						}
						mine = append(mine, res.Id)
					} else if _, err := c.Abort(ctx, res.Id, ""); err != nil {
						t.Errorf("abort: %v", err)
					}
				default:
					if len(mine) == 0 {
						continue
					}
					i := r.IntN(len(mine))
					if _, err := c.Cancel(ctx, mine[i], ""); err != nil {
						t.Errorf("cancel: %v", err)
					}
					mine = append(mine[:i], mine[i+1:]...)
				}
			}
		})
	}
	wg.Wait()

	opsC := newClientFor(t, s, agenttest.TokenOps)
	all, err := opsC.ListAll(ctx, &ledgerdv1.ListRequest{States: []ledgerdv1.ReservationState{
		ledgerdv1.ReservationState_RESERVATION_STATE_HELD, ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED, ledgerdv1.ReservationState_RESERVATION_STATE_ACTIVE,
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Booked profile by sweep line.
	type edge struct {
		at    time.Time
		delta int64
	}
	var edges []edge
	for _, r := range all {
		edges = append(edges, edge{r.Start.AsTime(), r.Parts[0].Amount}, edge{r.End.AsTime(), -r.Parts[0].Amount})
	}
	sort.Slice(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].delta < edges[j].delta
	})
	booked := map[time.Time]int64{}
	var level int64
	for _, e := range edges {
		level += e.delta
		if level > capacity {
			t.Fatalf("seed %d: overbooked at %v: %d > %d", seed, e.at, level, capacity)
		}
		booked[e.at] = level
	}
	av, err := opsC.Availability(ctx, &ledgerdv1.AvailabilityRequest{Resource: "gpu", From: ts(0), To: ts(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range av.Blocks {
		// The booked level in force at the block's start.
		var lvl int64
		for _, e := range edges {
			if e.at.After(b.Start.AsTime()) {
				break
			}
			lvl = booked[e.at]
		}
		if b.Free != capacity-lvl {
			t.Fatalf("seed %d: availability at %v says %d free, bookings say %d", seed, b.Start.AsTime(), b.Free, capacity-lvl)
		}
	}
	t.Logf("%d live bookings, %d availability steps", len(all), len(av.Blocks))
}

func newClientFor(t *testing.T, s *agenttest.Site, token string) *client.Client {
	t.Helper()
	c, err := client.New(s.Addrs, client.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
