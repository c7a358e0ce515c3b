package rpc

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
)

// What the edge checks is only what is about the wire: converting
// Timestamps and Durations to milliseconds, a page token's or a key's
// size, the states of a filter. Everything else a request says (names,
// IDs, amounts, parts, labels, TTL bounds, the end of time) is checked by
// the ledger with the state machine's own validator before anything is
// replicated, so the edge cannot accept what Apply refuses.
const (
	maxKeyLen      = 128
	maxIDLen       = 128
	timeFormat     = time.RFC3339Nano
	maxTimestampMs = ledger.MaxTimeMillis // 9999-12-31T23:59:59.999Z
)

// msTime converts Unix milliseconds to a UTC time.
func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// tsMs validates a Timestamp and converts it to Unix milliseconds
// (sub-millisecond precision is truncated).
func tsMs(field string, ts *timestamppb.Timestamp) (int64, error) {
	if err := ts.CheckValid(); err != nil {
		return 0, &ledger.FieldError{Field: field, Reason: "not a valid timestamp (0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z, nanos 0..999999999)"}
	}
	ms := ts.GetSeconds()*1000 + int64(ts.GetNanos())/1e6
	if ms < 0 || ms > maxTimestampMs {
		return 0, &ledger.FieldError{Field: field, Reason: "must lie between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z"}
	}
	return ms, nil
}

// windowMs converts a request's [from, to) window: from defaults to
// defFrom; to is required when requireTo is set and otherwise 0 (no end)
// when absent; a given to must be after from. Errors name the field.
func windowMs(from, to *timestamppb.Timestamp, defFrom int64, requireTo bool) (int64, int64, error) {
	f := defFrom
	if from != nil {
		var err error
		if f, err = tsMs("from", from); err != nil {
			return 0, 0, err
		}
	}
	if to == nil {
		if requireTo {
			return 0, 0, &ledger.FieldError{Field: "to", Reason: "required"}
		}
		return f, 0, nil
	}
	t, err := tsMs("to", to)
	if err != nil {
		return 0, 0, err
	}
	if t <= f {
		return 0, 0, &ledger.FieldError{Field: "to", Reason: "must be after from"}
	}
	return f, t, nil
}

// durationMs validates a Duration and converts it to milliseconds
// (sub-millisecond precision is truncated) without the saturation of
// time.Duration, which ends at 292 years.
func durationMs(field string, d *durationpb.Duration) (int64, error) {
	if err := d.CheckValid(); err != nil {
		return 0, &ledger.FieldError{Field: field, Reason: "not a valid duration (at most ±10000 years; seconds and nanos of one sign)"}
	}
	return d.GetSeconds()*1000 + int64(d.GetNanos())/1e6, nil
}

// durMs validates a required Duration of at least 1 ms. How long it may
// be is the ledger's to say: start + duration must not lie after
// 9999-12-31T23:59:59.999Z.
func durMs(field string, d *durationpb.Duration) (int64, error) {
	if d == nil {
		return 0, &ledger.FieldError{Field: field, Reason: "required"}
	}
	ms, err := durationMs(field, d)
	if err != nil {
		return 0, err
	}
	if ms <= 0 {
		return 0, &ledger.FieldError{Field: field, Reason: "must be at least 1ms"}
	}
	return ms, nil
}

// checkID validates an ID the ledger does not see (a Raft server's).
func checkID(field, id string) error {
	if id == "" {
		return &ledger.FieldError{Field: field, Reason: "required"}
	}
	if len(id) > maxIDLen {
		return &ledger.FieldError{Field: field, Reason: fmt.Sprintf("longer than %d bytes", maxIDLen)}
	}
	return nil
}

func checkKey(field, key string) error {
	if len(key) > maxKeyLen {
		return &ledger.FieldError{Field: field, Reason: fmt.Sprintf("longer than %d bytes", maxKeyLen)}
	}
	return nil
}

// shapeFromProto converts a Shape's times. now (Unix ms) is the default
// not_before; a not_before in the past is moved up to now, an exact start
// in the past is an error. The parts, the window and the end of time are
// the ledger's to check.
func shapeFromProto(field string, p *ledgerdv1.Shape, now int64) (ledger.Shape, error) {
	var s ledger.Shape
	if p == nil {
		return s, &ledger.FieldError{Field: field, Reason: "required"}
	}
	for _, part := range p.Parts {
		s.Parts = append(s.Parts, ledger.Part{Resource: part.GetResource(), Amount: part.GetAmount()})
	}
	d, err := durMs(field+".duration", p.Duration)
	if err != nil {
		return s, err
	}
	s.Duration = d
	if p.ExactStart != nil {
		if p.NotBefore != nil || p.Deadline != nil {
			return s, &ledger.FieldError{Field: field + ".exact_start", Reason: "excludes not_before and deadline"}
		}
		start, err := tsMs(field+".exact_start", p.ExactStart)
		if err != nil {
			return s, err
		}
		if start < now {
			return s, &ledger.FieldError{Field: field + ".exact_start", Reason: "lies in the past"}
		}
		// A window exactly as long as the duration (no overflow: both
		// are below 4e14); an end after the end of time is the ledger's
		// to refuse.
		s.NotBefore, s.Deadline = start, start+d
		return s, nil
	}
	s.NotBefore, s.Deadline = now, ledger.NoDeadline
	if p.NotBefore != nil {
		nb, err := tsMs(field+".not_before", p.NotBefore)
		if err != nil {
			return s, err
		}
		s.NotBefore = max(nb, now)
	}
	if p.Deadline != nil {
		dl, err := tsMs(field+".deadline", p.Deadline)
		if err != nil {
			return s, err
		}
		s.Deadline = dl
	}
	return s, nil
}
