package series

import "fmt"

// The public fields a FieldError can name: they are the names of the
// reserve command's flags and of the API fields that carry a series.
const (
	// FieldRepeat is the recurrence rule (-repeat, the API's repeat).
	FieldRepeat = "repeat"
	// FieldTZ is the IANA time zone (-tz).
	FieldTZ = "tz"
	// FieldStart is the series' first start (DTSTART, from -at).
	FieldStart = "start"
	// FieldNotBefore is the earliest instant an occurrence may start.
	FieldNotBefore = "not_before"
	// FieldEnd ends the series before an instant (cancel from a date on).
	FieldEnd = "end"
	// FieldDuration is each occurrence's length (-dur).
	FieldDuration = "duration"
	// FieldHorizon is how far ahead an endless series is booked.
	FieldHorizon = "horizon"
	// FieldEncoding is a stored spec that does not decode.
	FieldEncoding = "encoding"
)

// FieldError is bad input, attributed to one field and, for the rule, to
// the rule part at fault (FREQ, BYHOUR, ...). The API edge maps it to
// InvalidArgument with a field violation for Field.
type FieldError struct {
	// Field is one of the Field* constants.
	Field string
	// Part is the rule part at fault, e.g. "BYHOUR"; empty when the
	// problem is not in one part.
	Part string
	// Reason says what is wrong and, where it helps, what would be right.
	Reason string
}

// Error returns "repeat: BYHOUR: 24 is out of range 0..23", or
// "tz: ..." when there is no part.
func (e *FieldError) Error() string {
	if e.Part != "" {
		return fmt.Sprintf("%s: %s: %s", e.Field, e.Part, e.Reason)
	}
	return fmt.Sprintf("%s: %s", e.Field, e.Reason)
}

func ruleErr(part, format string, args ...any) *FieldError {
	return &FieldError{Field: FieldRepeat, Part: part, Reason: fmt.Sprintf(format, args...)}
}

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
