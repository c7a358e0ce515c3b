package main

import (
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// TestAdmissionNote pins the SCHEDULING column of the reservation table.
func TestAdmissionNote(t *testing.T) {
	job := ledgerdv1.ReservationKind_RESERVATION_KIND_VARIABLE_JOB
	nb := timestamppb.New(cliT0)
	cases := []struct {
		r    *ledgerdv1.Reservation
		want string
	}{
		{&ledgerdv1.Reservation{}, "-"},
		{&ledgerdv1.Reservation{ProbabilityPermille: 1000}, "-"},
		{&ledgerdv1.Reservation{Kind: job, NotBefore: nb}, "not before 2030-01-01T00:00:00Z"},
		{&ledgerdv1.Reservation{Kind: job, NotBefore: nb, Pushes: 3}, "not before 2030-01-01T00:00:00Z; moved later 3x"},
		{&ledgerdv1.Reservation{Relaxed: true, ProbabilityPermille: 875}, "relaxed p=0.875"},
		{&ledgerdv1.Reservation{Relaxed: true, ProbabilityPermille: 900, ShortUnits: 4, State: ledgerdv1.ReservationState_RESERVATION_STATE_DEGRADED}, "relaxed p=0.900; short 4 units"},
	}
	for _, tc := range cases {
		if got := admissionNote(tc.r); got != tc.want {
			t.Errorf("admissionNote(%v) = %q, want %q", tc.r, got, tc.want)
		}
	}
	for in, want := range map[string]uint32{"0.8": 800, "1": 1000, "0.001": 1, "0.95": 950, ".5": 500} {
		if got, err := parsePermille(in); err != nil || got != want {
			t.Errorf("parsePermille(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "-0.5", "1.001", "0.0005", "NaN", "x"} {
		if got, err := parsePermille(in); err == nil {
			t.Errorf("parsePermille(%q) = %d, want an error", in, got)
		}
	}
}
