package rpc_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// BenchmarkAPI measures one call through the whole API stack (client,
// HTTP/2, interceptors, validation, the fsm) on a single-replica site, per
// protocol. Raft replication is not included; see the cluster benchmarks.
func BenchmarkAPI(b *testing.B) {
	ctx := context.Background()
	for _, proto := range []struct {
		name string
		p    client.Protocol
	}{{"connect", client.ProtocolConnect}, {"grpc", client.ProtocolGRPC}, {"grpcweb", client.ProtocolGRPCWeb}} {
		s := agenttest.NewSite(b, agenttest.Options{API: rpc.Options{Auth: agenttest.NewAuth(b)}})
		ops, err := client.New(s.Addrs, client.Options{Token: agenttest.TokenOps, Protocol: proto.p})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ops.CreateResource(ctx, &ledgerdv1.Resource{Name: "cpu", Capacity: 1 << 40}); err != nil {
			b.Fatal(err)
		}
		acme, _ := client.New(s.Addrs, client.Options{Token: agenttest.TokenAcme, Protocol: proto.p})
		b.Run(fmt.Sprintf("op=find/proto=%s", proto.name), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := acme.Find(ctx, shape("cpu", 1, time.Hour, time.Hour, 0)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("op=reserve/proto=%s", proto.name), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := acme.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: shape("cpu", 1, time.Hour, time.Hour, 0)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidationReject measures the cost of refusing a bad request,
// which must stay cheap since it runs before anything is replicated.
func BenchmarkValidationReject(b *testing.B) {
	s := agenttest.NewSite(b, agenttest.Options{API: rpc.Options{Auth: agenttest.NewAuth(b)}})
	c := newAPI(s.URLs[0], agenttest.TokenAcme)
	req := connect.NewRequest(&ledgerdv1.HoldRequest{Shape: shape("cpu", -1, time.Hour, 0, 0)})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.res.Hold(context.Background(), req); connect.CodeOf(err) != connect.CodeInvalidArgument {
			b.Fatal(err)
		}
	}
}

// BenchmarkPolicyReserve measures a one-unit Reserve through the whole
// stack (Connect) on a resource with each admission policy, with live
// reservations already booked there. REJECT books the planner directly;
// the other policies go through the planner's Scheduler, so the ratio is
// what a policy costs an admission that fits.
func BenchmarkPolicyReserve(b *testing.B) {
	ctx := context.Background()
	for _, live := range []int{100, 10000} {
		for _, pol := range []ledgerdv1.Policy{ledgerdv1.Policy_POLICY_REJECT, ledgerdv1.Policy_POLICY_MOVE_VARIABLE, ledgerdv1.Policy_POLICY_RELAXED} {
			s := agenttest.NewSite(b, agenttest.Options{API: rpc.Options{Auth: agenttest.NewAuth(b)}})
			ops, err := client.New(s.Addrs, client.Options{Token: agenttest.TokenOps})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := ops.CreateResource(ctx, &ledgerdv1.Resource{Name: "cpu", Capacity: 1 << 40, Policy: pol}); err != nil {
				b.Fatal(err)
			}
			acme, _ := client.New(s.Addrs, client.Options{Token: agenttest.TokenAcme})
			reserve := func(i int) {
				if _, err := acme.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: shape("cpu", 1, time.Hour, time.Hour+time.Duration(i%97)*time.Minute, 0)}); err != nil {
					b.Fatal(err)
				}
			}
			for i := range live {
				reserve(i)
			}
			name := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(pol.String(), "POLICY_"), "_", "-"))
			b.Run(fmt.Sprintf("policy=%s/live=%d", name, live), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					reserve(i)
					i++
				}
			})
		}
	}
}
