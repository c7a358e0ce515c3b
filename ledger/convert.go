package ledger

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// msTime converts Unix milliseconds to a UTC time.
func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// MsToTimestamp converts Unix milliseconds to a protobuf Timestamp.
func MsToTimestamp(ms int64) *timestamppb.Timestamp { return timestamppb.New(msTime(ms)) }

// MsToDuration converts milliseconds to a protobuf Duration.
func MsToDuration(ms int64) *durationpb.Duration {
	return durationpb.New(time.Duration(ms) * time.Millisecond)
}
