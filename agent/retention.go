package agent

import (
	"fmt"
	"time"

	"github.com/ledgerd/ledgerd/fsm"
	"github.com/ledgerd/ledgerd/ledger/replicated"
)

// Bounds of ended_retention and ended_max. A retention under a minute or
// a handful of ended rows would drop a cancelled reservation before its
// client could read it back.
const (
	minEndedRetention = time.Minute
	minEndedMax       = 100
)

// retention is the retention of ended reservations and the cap on
// idempotency keys the configuration asks for, defaults applied.
func (c *Config) retention() fsm.Retention {
	r := fsm.Retention{Millis: fsm.DefaultRetention, MaxEnded: int64(c.EndedMax), IdempotencyMaxKeys: fsm.DefaultIdempotencyMaxKeys}
	if c.IdempotencyMaxKeys != 0 {
		r.IdempotencyMaxKeys = int64(c.IdempotencyMaxKeys)
	}
	if c.EndedRetention != 0 {
		r.Millis = time.Duration(c.EndedRetention).Milliseconds()
	}
	return r
}

// checkRetention refuses an ended_retention or ended_max the leader
// could not put into force, or one that would drop reservations almost
// as soon as they end.
func (c *Config) checkRetention() error {
	if d := time.Duration(c.EndedRetention); d != 0 && d < minEndedRetention {
		return fmt.Errorf("config: ended_retention: must be 0 (24h) or at least %s, got %s", minEndedRetention, d)
	}
	if c.EndedMax != 0 && c.EndedMax < minEndedMax {
		return fmt.Errorf("config: ended_max: must be 0 (no limit) or at least %d, got %d", minEndedMax, c.EndedMax)
	}
	if err := replicated.CheckRetention(c.retention()); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}
