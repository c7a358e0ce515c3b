package rpc

import (
	"fmt"
	"time"
	"unicode"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
)

// Limits on request contents; larger values get InvalidArgument.
const (
	maxParts       = 64
	maxNameLen     = 128
	maxLabels      = 32
	maxLabelKey    = 63
	maxLabelValue  = 256
	maxKeyLen      = 128
	maxIDLen       = 128
	maxDurationMs  = 100 * 365 * 24 * int64(time.Hour/time.Millisecond)
	timeFormat     = time.RFC3339Nano
	maxTimestampMs = 253402300799999 // 9999-12-31T23:59:59.999Z
)

// msTime converts Unix milliseconds to a UTC time.
func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// tsMs validates a Timestamp and converts it to Unix milliseconds
// (sub-millisecond precision is truncated).
func tsMs(field string, ts *timestamppb.Timestamp) (int64, error) {
	if err := ts.CheckValid(); err != nil {
		return 0, &ledger.FieldError{Field: field, Reason: "not a valid timestamp"}
	}
	ms := ts.AsTime().UnixMilli()
	if ms < 0 || ms > maxTimestampMs {
		return 0, &ledger.FieldError{Field: field, Reason: "must lie between 1970 and 9999"}
	}
	return ms, nil
}

// durMs validates a Duration as > 0 and bounded and converts it to milliseconds.
func durMs(field string, d *durationpb.Duration) (int64, error) {
	if d == nil {
		return 0, &ledger.FieldError{Field: field, Reason: "required"}
	}
	if err := d.CheckValid(); err != nil {
		return 0, &ledger.FieldError{Field: field, Reason: "not a valid duration"}
	}
	ms := d.AsDuration().Milliseconds()
	if ms <= 0 {
		return 0, &ledger.FieldError{Field: field, Reason: "must be at least 1ms"}
	}
	if ms > maxDurationMs {
		return 0, &ledger.FieldError{Field: field, Reason: "must be at most 100 years"}
	}
	return ms, nil
}

// checkName validates a resource name.
func checkName(field, name string) error {
	if name == "" {
		return &ledger.FieldError{Field: field, Reason: "required"}
	}
	if len(name) > maxNameLen {
		return &ledger.FieldError{Field: field, Reason: fmt.Sprintf("longer than %d bytes", maxNameLen)}
	}
	for _, r := range name {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return &ledger.FieldError{Field: field, Reason: "must be printable without spaces"}
		}
	}
	return nil
}

// checkID validates a reservation id.
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

func checkLabels(field string, l map[string]string) error {
	if len(l) > maxLabels {
		return &ledger.FieldError{Field: field, Reason: fmt.Sprintf("more than %d labels", maxLabels)}
	}
	for k, v := range l {
		if k == "" || len(k) > maxLabelKey {
			return &ledger.FieldError{Field: field, Reason: fmt.Sprintf("label keys must be 1..%d bytes", maxLabelKey)}
		}
		if len(v) > maxLabelValue {
			return &ledger.FieldError{Field: field + "[" + k + "]", Reason: fmt.Sprintf("longer than %d bytes", maxLabelValue)}
		}
	}
	return nil
}

// shapeFromProto validates a Shape. now (Unix ms) is the default not_before;
// a not_before in the past is moved up to now, an exact start in the past is
// an error.
func shapeFromProto(field string, p *ledgerdv1.Shape, now int64) (ledger.Shape, error) {
	var s ledger.Shape
	if p == nil {
		return s, &ledger.FieldError{Field: field, Reason: "required"}
	}
	if len(p.Parts) == 0 {
		return s, &ledger.FieldError{Field: field + ".parts", Reason: "at least one part is required"}
	}
	if len(p.Parts) > maxParts {
		return s, &ledger.FieldError{Field: field + ".parts", Reason: fmt.Sprintf("more than %d parts", maxParts)}
	}
	seen := make(map[string]bool, len(p.Parts))
	for i, part := range p.Parts {
		f := fmt.Sprintf("%s.parts[%d]", field, i)
		if part == nil {
			return s, &ledger.FieldError{Field: f, Reason: "required"}
		}
		if err := checkName(f+".resource", part.Resource); err != nil {
			return s, err
		}
		if seen[part.Resource] {
			return s, &ledger.FieldError{Field: f + ".resource", Reason: "resource listed twice"}
		}
		seen[part.Resource] = true
		if part.Amount <= 0 {
			return s, &ledger.FieldError{Field: f + ".amount", Reason: "must be > 0"}
		}
		s.Parts = append(s.Parts, ledger.Part{Resource: part.Resource, Amount: part.Amount})
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
		if start > maxTimestampMs-d {
			return s, &ledger.FieldError{Field: field + ".exact_start", Reason: "start + duration lies after 9999"}
		}
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
		if dl-d < s.NotBefore {
			return s, &ledger.FieldError{Field: field + ".deadline", Reason: "window [not_before, deadline] is shorter than duration (or inverted)"}
		}
		s.Deadline = dl
	}
	return s, nil
}
