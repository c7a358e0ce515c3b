package jepsen

import (
	"testing"
	"time"
)

// TestInvariants breaks each invariant once and checks that exactly that
// one reports a violation.
func TestInvariants(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	gpu := func(n int64) []Part { return []Part{{Resource: "gpu", Amount: n}} }
	good := func() []Reservation {
		return []Reservation{
			{ID: "a", ServerID: "1", Parts: gpu(1), Start: 0, End: 10, Status: StatusCommitted},
			{ID: "b", ServerID: "2", Parts: gpu(1), Start: 5, End: 15, Status: StatusHeld, HoldExpiresAt: now.UnixMilli() + 1000},
			{ID: "c", ServerID: "3", Parts: gpu(2), Start: 0, End: 5, Status: StatusAborted},
		}
	}
	h := History{Capacity: map[string]int64{"gpu": 2}, Groups: [][]string{{"gpu"}}, Ops: []Op{
		{Input: Input{Op: OpReserve, ID: "a"}, Output: Output{Code: CodeOK}},
		{Input: Input{Op: OpHold, ID: "b"}, Output: Output{Code: CodeOK}},
	}}
	tests := []struct {
		name   string
		mutate func(map[string][]Reservation)
		broken string // "" = all hold
	}{
		{"all good", func(map[string][]Reservation) {}, ""},
		{"overbooked", func(l map[string][]Reservation) {
			for n := range l {
				l[n] = append(l[n], Reservation{ID: "d", ServerID: "4", Parts: gpu(1), Start: 9, End: 12, Status: StatusCommitted})
			}
		}, "no-overbooking"},
		{"replica diverged", func(l map[string][]Reservation) { l["n2"][2].Status = StatusExpired }, "replicas-identical"},
		{"commit lost", func(l map[string][]Reservation) {
			for n := range l {
				l[n][0].Status = StatusAborted
			}
		}, "acked-writes-durable"},
		{"hold immortal", func(l map[string][]Reservation) {
			for n := range l {
				l[n][1].HoldExpiresAt = now.UnixMilli() - 5000
			}
		}, "holds-expire"},
		{"applied twice", func(l map[string][]Reservation) {
			for n := range l {
				l[n] = append(l[n], Reservation{ID: "c", ServerID: "5", Parts: gpu(1), Start: 50, End: 60, Status: StatusAborted})
			}
		}, "exactly-once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lists := map[string][]Reservation{"n1": good(), "n2": good(), "n3": good()}
			tt.mutate(lists)
			for _, r := range CheckInvariants(h, lists, InvariantOptions{Now: now}) {
				if want := r.Name != tt.broken; r.OK != want {
					t.Errorf("%s: ok=%v, want %v (violations %v)", r.Name, r.OK, want, r.Violations)
				}
			}
		})
	}
}

// TestPeakOverHalfOpen: back-to-back bookings of full capacity do not
// overlap.
func TestPeakOverHalfOpen(t *testing.T) {
	l := []Reservation{
		{Parts: []Part{{Resource: "x", Amount: 2}}, Start: 0, End: 10, Status: StatusCommitted},
		{Parts: []Part{{Resource: "x", Amount: 2}}, Start: 10, End: 20, Status: StatusHeld},
	}
	if _, _, ok := peakOver(l, "x", 2); !ok {
		t.Fatal("adjacent bookings reported as overbooking")
	}
	l[1].Start = 9
	if at, used, ok := peakOver(l, "x", 2); ok || at != 9 || used != 4 {
		t.Fatalf("overlap not found: at=%d used=%d ok=%v", at, used, ok)
	}
}
