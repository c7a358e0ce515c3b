package ledger

import (
	"context"
	"fmt"
	"strings"
	"time"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// SeriesArgs are the arguments of SeriesLedger.ReserveSeries: a standing
// reservation of Parts for Duration ms at every occurrence of Repeat (an
// RFC 5545 RRULE) read in the IANA zone TZ.
type SeriesArgs struct {
	Write
	ID       string
	Parts    []Part
	Duration int64
	Repeat   string
	// TZ is the zone; empty means UTC.
	TZ string
	// Start is DTSTART (Unix ms); HasStart false means local midnight of
	// today in TZ, so that BYHOUR=9 means 09:00.
	Start    int64
	HasStart bool
	// Horizon of an endless series in ms; 0 means the ledger's default.
	Horizon      int64
	AllOrNothing bool
	Labels       map[string]string
}

// CancelSeriesArgs are the arguments of SeriesLedger.CancelSeries.
type CancelSeriesArgs struct {
	Write
	ID string
	// From is the first instant no longer booked (Unix ms); 0 means now.
	From int64
}

// ModifySeriesArgs are the arguments of SeriesLedger.ModifySeries: from
// From on, the series ID is replaced by NewID with a new Duration and/or
// Parts (zero values keep the old ones), in the same rhythm.
type ModifySeriesArgs struct {
	Write
	ID       string
	From     int64
	NewID    string
	Duration int64
	Parts    []Part
}

// SeriesLedger is the part of a ledger that books standing reservations.
// Every occurrence is an ordinary reservation (Get, List, Cancel, Modify
// and Watch handle it); these calls manage the series as a whole.
type SeriesLedger interface {
	// ReserveSeries creates a series and books its first occurrences.
	// An all-or-nothing series that does not fit fails with a
	// *SeriesRejectedError and books nothing.
	ReserveSeries(ctx context.Context, a SeriesArgs) (*ledgerdv1.ReserveSeriesResponse, error)
	// GetSeries returns a series.
	GetSeries(ctx context.Context, id string, stale bool) (*ledgerdv1.Series, error)
	// CancelSeries ends a series from an instant on.
	CancelSeries(ctx context.Context, a CancelSeriesArgs) (*ledgerdv1.CancelSeriesResponse, error)
	// ModifySeries replaces a series from an instant on by a new one.
	ModifySeries(ctx context.Context, a ModifySeriesArgs) (*ledgerdv1.ModifySeriesResponse, error)
}

// SeriesRejectedError is the refusal of an all-or-nothing series: the
// occurrences that do not fit, each with why and the earliest start that
// would fit. It unwraps to its *RejectedError (the first occurrence's).
type SeriesRejectedError struct {
	Rejected *RejectedError
	Skipped  []*ledgerdv1.SkippedOccurrence
}

// Error lists the occurrences (at most ten).
func (e *SeriesRejectedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rejected (%s): %d occurrences cannot be booked, nothing was booked:", e.Rejected.Reason, len(e.Skipped))
	for i, s := range e.Skipped {
		if i == 10 {
			fmt.Fprintf(&b, " …")
			break
		}
		fmt.Fprintf(&b, " %s (%s", s.GetId(), s.GetMessage())
		if a := s.GetEarliestAlternative(); a != nil {
			fmt.Fprintf(&b, "; earliest start that would fit: %s", a.AsTime().UTC().Format(time.RFC3339))
		}
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the rejection, so the error maps like any rejection.
func (e *SeriesRejectedError) Unwrap() error { return e.Rejected }
