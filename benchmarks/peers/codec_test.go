package peers

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/benchmarks/service"
)

func TestCodecRoundTrip(t *testing.T) {
	tests := []resourceDoc{
		{Capacity: 5},
		{Capacity: 128, Entries: []entry{{1, 10, 20, 3, stateHeld}, {1 << 60, -5, 7, 128, stateCommitted}}},
	}
	for _, d := range tests {
		got, err := decodeDoc(d.encode())
		if err != nil {
			t.Fatal(err)
		}
		if got.Capacity != d.Capacity || !slices.Equal(got.Entries, d.Entries) {
			t.Fatalf("round trip: got %+v, want %+v", got, d)
		}
	}
	for _, bad := range [][]byte{nil, {1, 2, 3}, make([]byte, 8+entrySize-1)} {
		if _, err := decodeDoc(bad); err == nil {
			t.Fatalf("decodeDoc(%d bytes) accepted", len(bad))
		}
	}
}

// TestEtcdAdmission books on a one-member embedded etcd: a request that
// does not fit is refused, one that fits later is moved, modify and cancel
// release capacity, and the read-back check holds.
func TestEtcdAdmission(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd member")
	}
	e, err := NewEtcd(1, 23700, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Setup(ctx, []string{"r"}, 10); err != nil {
		t.Fatal(err)
	}
	a, err := e.Reserve(ctx, service.Shape{Resource: "r", Amount: 8, Duration: 10, NotBefore: 0, Deadline: 10})
	if err != nil || a.Start != 0 {
		t.Fatalf("first: %+v %v", a, err)
	}
	if _, err := e.Reserve(ctx, service.Shape{Resource: "r", Amount: 3, Duration: 10, NotBefore: 0, Deadline: 15}); !errors.Is(err, service.ErrRejected) {
		t.Fatalf("overbooking request: err = %v, want rejection", err)
	}
	b, err := e.HoldCommit(ctx, service.Shape{Resource: "r", Amount: 3, Duration: 10, NotBefore: 0, Deadline: 30})
	if err != nil || b.Start != 10 {
		t.Fatalf("moved: %+v %v, want start 10", b, err)
	}
	if _, err := e.Modify(ctx, a, service.Shape{Resource: "r", Amount: 11, Duration: 10, NotBefore: 0, Deadline: 10}); !errors.Is(err, service.ErrRejected) {
		t.Fatalf("modify beyond capacity: %v", err)
	}
	if err := e.Cancel(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := e.Read(ctx, a); err == nil {
		t.Fatal("cancelled booking still readable")
	}
	if _, err := e.Reserve(ctx, service.Shape{Resource: "r", Amount: 10, Duration: 10, NotBefore: 0, Deadline: 10}); err != nil {
		t.Fatalf("capacity not released by cancel: %v", err)
	}
	n, err := e.Verify(ctx)
	if err != nil || n != 2 {
		t.Fatalf("verify: %d bookings, %v; want 2", n, err)
	}
}
