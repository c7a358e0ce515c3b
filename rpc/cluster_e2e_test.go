package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// realShape asks for amount GPUs for an hour, starting at least start from now.
func realShape(amount int64, start time.Duration) *ledgerdv1.Shape {
	return &ledgerdv1.Shape{
		Parts:     []*ledgerdv1.ResourceAmount{{Resource: "gpu", Amount: amount}},
		Duration:  durationpb.New(time.Hour),
		NotBefore: timestamppb.New(time.Now().Add(start)),
	}
}

func clusterClient(t *testing.T, addrs []string, token string) *client.Client {
	t.Helper()
	c, err := client.New(addrs, client.Options{Token: token, MaxAttempts: 40, BaseBackoff: 20 * time.Millisecond, MaxBackoff: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRealClusters(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Raft clusters")
	}
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("nodes=%d", n), func(t *testing.T) {
			testRealCluster(t, n)
		})
	}
}

func testRealCluster(t *testing.T, n int) {
	ctx := context.Background()
	c := agenttest.NewCluster(t, n, rpc.Options{Auth: agenttest.NewAuth(t)})
	ops := clusterClient(t, c.Addrs(), agenttest.TokenOps)
	if _, err := ops.CreateResource(ctx, &ledgerdv1.Resource{Name: "gpu", Capacity: 8}); err != nil {
		t.Fatal(err)
	}

	// Book through every node; followers forward to the leader.
	var ids []string
	for i, addr := range c.Addrs() {
		acme := clusterClient(t, []string{addr}, agenttest.TokenAcme)
		r, err := acme.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: realShape(2, time.Hour)})
		if err != nil {
			t.Fatalf("reserve via node %d: %v", i, err)
		}
		ids = append(ids, r.Id)
	}
	// Every node reads every booking (linearizable reads).
	for i, addr := range c.Addrs() {
		acme := clusterClient(t, []string{addr}, agenttest.TokenAcme)
		for _, id := range ids {
			if _, err := acme.Get(ctx, id); err != nil {
				t.Fatalf("node %d cannot read %s: %v", i, id, err)
			}
		}
	}

	// A plain gRPC client against the last node (a follower when n = 3).
	conn, err := grpc.NewClient(c.Addrs()[n-1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	gctx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+agenttest.TokenAcme)
	var got ledgerdv1.ListResponse
	if err := conn.Invoke(gctx, "/ledgerd.v1.ReservationService/List", &ledgerdv1.ListRequest{}, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Reservations) != n {
		t.Fatalf("grpc list: %d reservations, want %d", len(got.Reservations), n)
	}

	// Members and Leader. Under load an election may be under way, so
	// wait for a view with exactly one leader.
	waitUntil(t, 15*time.Second, "one leader among all members", func() (bool, string) {
		ms, err := ops.Members(ctx)
		if err != nil {
			t.Fatal(err)
		}
		leaders := 0
		for _, m := range ms {
			if m.Role == ledgerdv1.Role_ROLE_LEADER {
				leaders++
			}
		}
		l, err := ops.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(ms) == n && leaders == 1 && l.Id != "" && l.ApiAddress != "", fmt.Sprintf("members = %v, leader = %v", ms, l)
	})

	// Snapshot download.
	var snap bytes.Buffer
	v, err := ops.SaveSnapshot(ctx, &snap)
	if err != nil || v == 0 || snap.Len() == 0 {
		t.Fatalf("save snapshot: version %d, %d bytes, %v", v, snap.Len(), err)
	}
	// Book more, then restore the snapshot: the later booking is gone.
	extra, err := ops.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: realShape(1, 3*time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	// A corrupted or cut snapshot is refused as invalid and changes
	// nothing: raft would stop the leader if the state machine refused a
	// snapshot it had been given to restore.
	bodyAt := bytes.IndexByte(snap.Bytes(), '\n')
	bodyAt += 1 + bytes.IndexByte(snap.Bytes()[bodyAt+1:], '\n') + 1
	flipped := bytes.Clone(snap.Bytes())
	flipped[bodyAt+40] ^= 0xff
	for name, bad := range map[string][]byte{
		"a flipped byte": flipped,
		"cut in half":    snap.Bytes()[:bodyAt+(snap.Len()-bodyAt)/2],
		"header only":    snap.Bytes()[:bodyAt],
	} {
		_, err := ops.RestoreSnapshot(ctx, bytes.NewReader(bad))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "not a snapshot this ledger can restore") {
			t.Fatalf("restore of a snapshot with %s: %v, want InvalidArgument naming a bad snapshot", name, err)
		}
		if _, err := ops.Get(ctx, extra.Id); err != nil {
			t.Fatalf("after the refused restore of a snapshot with %s, the later booking: %v", name, err)
		}
	}
	if _, err := ops.RestoreSnapshot(ctx, bytes.NewReader(snap.Bytes())); err != nil {
		t.Fatalf("restore snapshot: %v", err)
	}
	if _, err := ops.Get(ctx, extra.Id); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("after restore, the later booking: %v, want NotFound", err)
	}
	for _, id := range ids {
		if _, err := ops.Get(ctx, id); err != nil {
			t.Fatalf("after restore, %s: %v", id, err)
		}
	}
	if n == 1 {
		return
	}

	// A leader-only call through a client that knows only a follower
	// follows the Ledgerd-Leader hint.
	old := c.WaitLeader(10 * time.Second)
	var follower *agenttest.Server
	for _, s := range c.Servers {
		if s != old {
			follower = s
		}
	}
	viaFollower, err := client.New([]string{follower.Addr}, client.Options{Token: agenttest.TokenOps, MaxAttempts: 10, BaseBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := viaFollower.TransferLeadership(ctx, ""); err != nil {
		t.Fatalf("transfer leadership via a follower: %v", err)
	}
	waitUntil(t, 10*time.Second, "leadership moves", func() (bool, string) {
		l := c.WaitLeader(10 * time.Second)
		return l != old, "leader " + l.Name
	})

	// Stop the leader; a client over every node keeps booking, exactly once
	// per idempotency key, and a watch attached to the leader resumes on
	// another node without gap or duplicate.
	leader := c.WaitLeader(10 * time.Second)
	acme := clusterClient(t, c.Addrs(), agenttest.TokenAcme)
	watcher := clusterClient(t, []string{leader.Addr, c.Addrs()[0], c.Addrs()[1], c.Addrs()[2]}, agenttest.TokenOps)
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	events := make(chan *ledgerdv1.Event, 1000)
	watchDone := make(chan error, 1)
	go func() {
		watchDone <- watcher.Watch(wctx, client.Position{Version: 1}, func(e *ledgerdv1.Event) error {
			events <- e
			return nil
		})
	}()
	c.Stop(leader)
	req := &ledgerdv1.ReserveRequest{Shape: realShape(1, 2*time.Hour), IdempotencyKey: "after-failover"}
	r1, err := acme.Reserve(ctx, req)
	if err != nil {
		t.Fatalf("reserve after leader loss: %v", err)
	}
	r2, err := acme.Reserve(ctx, proto.CloneOf(req))
	if err != nil || r2.Id != r1.Id {
		t.Fatalf("retry after fail-over booked again: %v vs %v (%v)", r1.Id, r2.GetId(), err)
	}
	all, err := acme.ListAll(ctx, &ledgerdv1.ListRequest{})
	if err != nil || len(all) != n+1 {
		t.Fatalf("after fail-over: %d reservations (%v), want %d", len(all), err, n+1)
	}

	// The watch saw exactly the history, in order, through the fail-over.
	hist, err := ops.History(ctx, &ledgerdv1.HistoryRequest{FromVersion: 1, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var seen []*ledgerdv1.Event
	timeout := time.After(20 * time.Second)
	for len(seen) < len(hist.Events) {
		select {
		case e := <-events:
			seen = append(seen, e)
		case err := <-watchDone:
			t.Fatalf("watch ended: %v", err)
		case <-timeout:
			t.Fatalf("watch saw %d of %d events", len(seen), len(hist.Events))
		}
	}
	for i := range hist.Events {
		if !proto.Equal(seen[i], hist.Events[i]) {
			t.Fatalf("event %d: watch %v, history %v", i, seen[i], hist.Events[i])
		}
	}
	stopWatch()
	if err := <-watchDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("watch: %v", err)
	}
	select {
	case e := <-events:
		t.Fatalf("watch delivered an event beyond the history: %v", e)
	default:
	}
}

func TestRealClusterUnavailableWithoutQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Raft cluster")
	}
	ctx := context.Background()
	c := agenttest.NewCluster(t, 3, rpc.Options{Auth: agenttest.NewAuth(t)})
	ops := clusterClient(t, c.Addrs(), agenttest.TokenOps)
	if _, err := ops.CreateResource(ctx, &ledgerdv1.Resource{Name: "gpu", Capacity: 8}); err != nil {
		t.Fatal(err)
	}
	survivor := c.Servers[0]
	for _, s := range c.Servers[1:] {
		c.Stop(s)
	}
	one, err := client.New([]string{survivor.Addr}, client.Options{Token: agenttest.TokenAcme, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err = one.Reserve(cctx, &ledgerdv1.ReserveRequest{Shape: realShape(1, time.Hour)})
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("write without quorum: %v, want Unavailable", err)
	}
	var ce *connect.Error
	if !errors.As(err, &ce) {
		t.Fatal("not a connect error")
	}
}
