package rpc_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc"
	"github.com/ledgerd/ledgerd/rpc/client"
	"github.com/ledgerd/ledgerd/rpc/rpctest"
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
		s := rpctest.NewSite(b, rpctest.Options{API: rpc.Options{Auth: rpctest.NewAuth(b)}})
		ops, err := client.New(s.Addrs, client.Options{Token: rpctest.TokenOps, Protocol: proto.p})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ops.CreateResource(ctx, &ledgerdv1.Resource{Name: "cpu", Capacity: 1 << 40}); err != nil {
			b.Fatal(err)
		}
		acme, _ := client.New(s.Addrs, client.Options{Token: rpctest.TokenAcme, Protocol: proto.p})
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
	s := rpctest.NewSite(b, rpctest.Options{API: rpc.Options{Auth: rpctest.NewAuth(b)}})
	c := newAPI(s.URLs[0], rpctest.TokenAcme)
	req := connect.NewRequest(&ledgerdv1.HoldRequest{Shape: shape("cpu", -1, time.Hour, 0, 0)})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.res.Hold(context.Background(), req); connect.CodeOf(err) != connect.CodeInvalidArgument {
			b.Fatal(err)
		}
	}
}
