package fsm

import (
	"fmt"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// Retention of ended reservations: a reservation that ended (completed,
// aborted, expired, cancelled, denied) stays readable for a while after
// its last change, then it is dropped. How long, and how many ended rows
// are kept at most, is replicated state: TYPE_SET_RETENTION sets both (and
// the cap on idempotency keys), so every replica drops the same rows at
// the same entry whatever its own configuration says. Until such an entry
// is applied a replica uses Config.Retention, keeps any number, and caps
// keys at Config.IdempotencyMaxKeys.
//
// Every ended row has exactly one drop timer (timersFor), kept in
// state.drops apart from the other timers and keyed by the row's last
// change, not by when it is due: the retention is the same for every
// row, so the order is the same, and a new retention needs no pass over
// the rows. The row that ended first is the list's minimum: past
// max_ended, trimEnded drops from there, in the order the drops would
// have come anyway.
//
// An entry drops at most maxDropsPerEntry ended rows, counting both
// those whose retention is up and those past the limit. Dropping costs
// about a microsecond a row, so a shorter retention or a new limit on a
// day of turnover (millions of ended rows) would otherwise stall every
// replica for seconds in one entry. While rows are left over, NextDue
// says work is due now, and the leader's ticks (and every other entry)
// drop the rest, maxDropsPerEntry at a time. Each member of a group has
// its own budget, as if it were a lone entry.

// versionRetention is the envelope version of TYPE_SET_RETENTION.
const versionRetention uint32 = 6

// RetentionVersion is the envelope version every server must apply before
// a TYPE_SET_RETENTION entry may be proposed.
const RetentionVersion = versionRetention

// MaxRetentionMillis is the longest retention TYPE_SET_RETENTION accepts:
// 3650 days.
const MaxRetentionMillis int64 = 3650 * 24 * 3_600_000

// maxDropsPerEntry bounds the ended rows one entry drops (see above):
// 3.3-3.5 ms of work in BenchmarkDropEntry.
const maxDropsPerEntry = 4096

// MaxIdempotencyMaxKeys is the largest cap on idempotency keys
// TYPE_SET_RETENTION accepts: what an int holds on every platform, so
// that replicas of any word size keep the same keys.
const MaxIdempotencyMaxKeys int64 = 1<<31 - 1

// Retention is the retention of ended reservations and idempotency keys
// in force.
type Retention struct {
	// Millis is how long an ended reservation stays readable after its
	// last change, in milliseconds of log time.
	Millis int64
	// MaxEnded is the most ended reservations kept; 0: no limit.
	MaxEnded int64
	// IdempotencyMaxKeys is the most idempotency keys remembered (keys
	// younger than Config.IdempotencyMinAge are kept past it). In a
	// command, 0 leaves it unchanged.
	IdempotencyMaxKeys int64
	// Set says that a TYPE_SET_RETENTION entry set Millis and MaxEnded;
	// false: they are the replica's configuration (Config.Retention, no
	// limit). IdempotencyMaxKeysSet says the same of IdempotencyMaxKeys
	// (false: Config.IdempotencyMaxKeys). Both are ignored in commands.
	Set, IdempotencyMaxKeysSet bool
}

// checkSetRetention runs the checks of a TYPE_SET_RETENTION payload.
func checkSetRetention(c *fsmv1.SetRetention) *FieldError {
	if r := c.GetRetentionMillis(); r < 1 || r > MaxRetentionMillis {
		return fieldErr("set_retention.retention_millis", fmt.Sprintf("must lie between 1 and %d (3650 days), is %d", MaxRetentionMillis, r))
	}
	if n := c.GetMaxEnded(); n < 0 {
		return fieldErr("set_retention.max_ended", fmt.Sprintf("must be >= 0 (0: no limit), is %d", n))
	}
	if n := c.GetIdempotencyMaxKeys(); n < 0 || n > MaxIdempotencyMaxKeys {
		return fieldErr("set_retention.idempotency_max_keys", fmt.Sprintf("must lie between 0 (unchanged) and %d, is %d", MaxIdempotencyMaxKeys, n))
	}
	return nil
}

// SetRetentionCommand returns the TYPE_SET_RETENTION command that sets r
// (r.Set and r.IdempotencyMaxKeysSet are ignored; a zero
// r.IdempotencyMaxKeys leaves the cap on keys as it is).
func SetRetentionCommand(r Retention) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_SET_RETENTION, Payload: &fsmv1.Command_SetRetention{
		SetRetention: &fsmv1.SetRetention{RetentionMillis: r.Millis, MaxEnded: r.MaxEnded, IdempotencyMaxKeys: r.IdempotencyMaxKeys}}}
}

// setRetention applies TYPE_SET_RETENTION. Rows that a shorter retention
// has made due are dropped by the advance that follows the command, and
// rows past max_ended by trimEnded, both within the entry's budget.
func (s *state) setRetention(cmd *fsmv1.Command) *fsmv1.Result {
	c := cmd.GetSetRetention()
	if fe := checkSetRetention(c); fe != nil {
		return fe.result()
	}
	if s.adoptRetention(c) {
		// Forget at once what a smaller cap leaves out, so that the
		// state after this entry is what a replica restored from it
		// computes (restore trims with the cap too).
		s.idem.trimKeeping(s.idemMaxKeys, s.now, s.cfg.IdempotencyMinAge)
	}
	return &fsmv1.Result{Status: fsmv1.Result_STATUS_OK}
}

// adoptRetention puts checked values into force, from an entry or a
// snapshot, and reports whether they carry a cap on idempotency keys.
func (s *state) adoptRetention(c *fsmv1.SetRetention) bool {
	s.retention, s.maxEnded, s.retentionSet = c.GetRetentionMillis(), c.GetMaxEnded(), true
	n := c.GetIdempotencyMaxKeys()
	if n > 0 {
		s.idemMaxKeys, s.idemMaxSet = int(n), true
	}
	return n > 0
}

// trimEnded drops the rows that ended first while more than maxEnded
// ended rows are kept, within the entry's budget.
func (s *state) trimEnded() {
	if s.maxEnded <= 0 {
		return
	}
	for int64(s.drops.Len()) > s.maxEnded && s.dropBudget > 0 {
		t, _ := s.drops.Min()
		s.take(t)
		s.fire(t)
	}
}

// captureRetention records the retention in msg once an entry set it.
func (s *state) captureRetention(msg *fsmv1.Snapshot) {
	if s.retentionSet {
		msg.Retention = &fsmv1.SetRetention{RetentionMillis: s.retention, MaxEnded: s.maxEnded}
		if s.idemMaxSet {
			msg.Retention.IdempotencyMaxKeys = int64(s.idemMaxKeys)
		}
	}
}

// restoreRetention takes the retention of a snapshot, before its rows'
// timers are made.
func (s *state) restoreRetention(msg *fsmv1.Snapshot) error {
	r := msg.GetRetention()
	if r == nil {
		return nil
	}
	if fe := checkSetRetention(r); fe != nil {
		return badf("retention: %v", fe)
	}
	s.adoptRetention(r)
	return nil
}

// Retention returns the retention of ended reservations in force.
func (f *FSM) Retention() Retention {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s := f.st
	return Retention{Millis: s.retention, MaxEnded: s.maxEnded, IdempotencyMaxKeys: int64(s.idemMaxKeys),
		Set: s.retentionSet, IdempotencyMaxKeysSet: s.idemMaxSet}
}
