package ledger

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// msTime converts Unix milliseconds to a UTC time.
func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// minTimeMillis is 0001-01-01T00:00:00Z, the first instant a Timestamp
// can carry.
const minTimeMillis int64 = -62135596800000

// MsToTimestamp converts Unix milliseconds to a protobuf Timestamp. An
// instant outside what a Timestamp can carry (a row booked past
// 9999-12-31T23:59:59.999Z before such bookings were refused) is clamped
// to the nearest end of the range, so every reader — JSON included —
// can answer; the row itself is kept as stored.
func MsToTimestamp(ms int64) *timestamppb.Timestamp {
	return timestamppb.New(msTime(min(max(ms, minTimeMillis), MaxTimeMillis)))
}

// MsToDuration converts milliseconds to a protobuf Duration.
func MsToDuration(ms int64) *durationpb.Duration {
	return durationpb.New(time.Duration(ms) * time.Millisecond)
}
