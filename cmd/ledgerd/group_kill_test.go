package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/internal/testwait"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// TestGroupCommitAcrossLeaderKill runs concurrent writers whose reserves
// the client coalesces into batches (so the leader groups them into
// shared log entries), half through the leader and half through a
// follower (forwarded batches are grouped too), and SIGKILLs the leader
// in the middle. Every writer retries its reserve with the same
// idempotency key until it is acknowledged. Afterwards every acknowledged
// reservation is present with the ID and version it was acknowledged
// with, nothing was booked twice, groups did happen (several reservations
// created by one entry), and every replica — the killed leader too, once
// restarted — holds exactly the same reservations for every entry: no
// group is split. Runs with LEDGERD_E2E=1.
func TestGroupCommitAcrossLeaderKill(t *testing.T) {
	bin := e2eBinary(t)
	sec := makePKI(t, bin, []string{"head-1", "head-2", "head-3"})
	procs := startAgents(t, bin, sec)
	stopWithLogs(t, procs)
	leader := findLeader(t, sec, procs)
	var follower *agentProc
	for _, p := range procs {
		if p != leader {
			follower = p
			break
		}
	}
	mustDo(t, sec, procs, "create cpu", func(ctx context.Context, c *client.Client) error {
		_, err := c.CreateResource(ctx, &ledgerdv1.Resource{Name: "cpu", Capacity: 1_000_000, Unit: "cores"})
		if err != nil && strings.Contains(err.Error(), "already exists") {
			return nil
		}
		return err
	})
	newClient := func(ps ...*agentProc) *client.Client {
		var addrs []string
		for _, p := range ps {
			addrs = append(addrs, p.http)
		}
		// Coalescing is on by default: concurrent calls travel as
		// Batch calls.
		c, err := client.New(addrs, client.Options{Token: sec.token, TLS: sec.tls.Clone()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	clients := []*client.Client{newClient(procs...), newClient(follower)}

	var (
		mu    sync.Mutex
		acked = map[string]*ledgerdv1.Reservation{} // key -> the acknowledged reservation
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	from := time.Now()
	// Every write, retries included, ends by this deadline or fails the test.
	runCtx, stopRun := context.WithTimeout(context.Background(), 90*time.Second)
	defer stopRun()
	reserve := func(c *client.Client, key string) {
		for {
			ctx, cancel := context.WithTimeout(runCtx, 5*time.Second)
			r, err := c.Reserve(ctx, &ledgerdv1.ReserveRequest{IdempotencyKey: key, Shape: &ledgerdv1.Shape{
				Parts:    []*ledgerdv1.ResourceAmount{{Resource: "cpu", Amount: 1}},
				Duration: durationpb.New(time.Hour), NotBefore: timestamppb.New(from), Deadline: timestamppb.New(from.Add(24 * time.Hour)),
			}})
			cancel()
			if err == nil {
				mu.Lock()
				acked[key] = r
				mu.Unlock()
				return
			}
			// A retry of the same key after a short pause, until it is
			// acknowledged or the run's deadline fails the test.
			pause := time.NewTimer(20 * time.Millisecond)
			select {
			case <-pause.C:
			case <-runCtx.Done():
				pause.Stop()
				t.Errorf("reserve %s: still failing at the deadline: %v", key, err)
				return
			}
		}
	}
	const writersPerClient = 24
	for ci, c := range clients {
		for w := range writersPerClient {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					reserve(c, fmt.Sprintf("c%d-w%d-%d", ci, w, i))
				}
			}()
		}
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	testwait.Until(t, 60*time.Second, "300 acknowledged reserves before the kill", func() bool { return count() >= 300 })
	if err := leader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-leader.exited
	atKill := count()
	var alive []*agentProc
	for _, p := range procs {
		if p != leader {
			alive = append(alive, p)
		}
	}
	testwait.Until(t, 60*time.Second, "300 more acknowledged reserves after the kill", func() bool { return count() >= atKill+300 })
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d reserves acknowledged, %d of them before the leader's SIGKILL", len(acked), atKill)

	// What the survivors hold, after a linearizable read.
	list := func(c *client.Client, stale bool) (map[string]uint64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		rs, err := c.ListAll(ctx, &ledgerdv1.ListRequest{Stale: stale})
		out := map[string]uint64{}
		for _, r := range rs {
			out[r.GetId()] = r.GetCreatedVersion()
		}
		return out, err
	}
	var held map[string]uint64
	mustDo(t, sec, alive, "list", func(context.Context, *client.Client) error {
		var err error
		held, err = list(sec.client(t, alive...), false)
		return err
	})
	perVersion := map[uint64][]string{}
	for key, r := range acked {
		v, ok := held[r.GetId()]
		switch {
		case !ok:
			t.Errorf("acknowledged reservation %s (key %s) is missing", r.GetId(), key)
		case v != r.GetCreatedVersion():
			t.Errorf("reservation %s (key %s): created version %d, acknowledged as %d", r.GetId(), key, v, r.GetCreatedVersion())
		}
	}
	for id, v := range held {
		perVersion[v] = append(perVersion[v], id)
	}
	// Every key was retried until acknowledged: a write that took
	// effect twice would show as an extra reservation.
	if len(held) != len(acked) {
		t.Errorf("the ledger holds %d reservations for %d acknowledged keys", len(held), len(acked))
	}
	biggest, grouped := 0, 0
	for _, ids := range perVersion {
		biggest = max(biggest, len(ids))
		if len(ids) > 1 {
			grouped += len(ids)
		}
	}
	if biggest < 3 {
		t.Errorf("no entry created more than %d reservations: the writes were not grouped", biggest)
	}
	t.Logf("%d reservations in %d entries; %d of them shared an entry, at most %d in one", len(held), len(perVersion), grouped, biggest)

	// Every replica holds exactly the same: every entry's reservations,
	// all of them or none. The survivors first, then the killed leader
	// once it is back.
	same := func(p *agentProc) {
		t.Helper()
		c := sec.client(t, p)
		var mine map[string]uint64
		testwait.Until(t, 30*time.Second, p.name+" to catch up", func() bool {
			var err error
			mine, err = list(c, true)
			return err == nil && len(mine) >= len(held)
		})
		if !maps.Equal(mine, held) {
			var diff []string
			for id, v := range held {
				if mine[id] != v {
					diff = append(diff, fmt.Sprintf("%s@%d", id, v))
				}
			}
			slices.Sort(diff)
			t.Fatalf("%s differs (%d reservations, the ledger %d; first differences %v)", p.name, len(mine), len(held), diff[:min(len(diff), 10)])
		}
	}
	for _, p := range alive {
		same(p)
	}
	leader.log.Reset()
	leader.start(t, bin)
	if err := waitReady([]*agentProc{leader}, sec.tls, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	same(leader)
}
