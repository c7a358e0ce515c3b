package replicated

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/ledgerd/ledgerd/fsm"
)

// Ticker is the leader's time-triggered work: cluster.Config.Tick and
// NextDue. *SeriesTicker and *RetentionTicker implement it.
type Ticker interface {
	Tick() []byte
	NextDue() (int64, bool)
}

// RetentionTicker puts the leader's configured retention of ended
// reservations and cap on idempotency keys into the log. While the values
// in force (replicated state, fsm.FSM.Retention) differ from the
// configured ones, or a cap on keys configured away from the default is
// not in the log yet, and every server can apply fsm.RetentionVersion,
// NextDue says a tick is due now and Tick returns the TYPE_SET_RETENTION
// entry; otherwise both pass to the ticker it wraps.
//
// The values in force are whatever the last such entry set, so replicas
// never disagree about which rows and keys they keep; the configuration
// only decides what a leader proposes. Servers configured differently
// would each put their own values into force while they lead, so the
// settings belong in every server's configuration alike. (Until an entry
// sets the cap on keys, each replica uses its own configured cap: a
// configured cap is put into the log even where it is already in use,
// since other servers may be configured otherwise.)
type RetentionTicker struct {
	fsm      *fsm.FSM
	want     fsm.Retention
	next     Ticker
	now      func() time.Time
	log      *slog.Logger
	versions atomic.Pointer[Versioner]
	// waiting is set once the leader has logged that some server cannot
	// apply the entry yet, so that it says so once, not at every tick.
	waiting atomic.Bool
}

// NewRetentionTicker returns the tick that keeps the retention in force
// at want (want.Set and want.IdempotencyMaxKeysSet are ignored), wrapping
// next. want must pass CheckRetention. Until SetVersioner is called no
// entry is proposed.
func NewRetentionTicker(f *fsm.FSM, want fsm.Retention, next Ticker, now func() time.Time, log *slog.Logger) *RetentionTicker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	want.Set, want.IdempotencyMaxKeysSet = false, false
	return &RetentionTicker{fsm: f, want: want, next: next, now: now, log: log}
}

// CheckRetention reports why r cannot be put into force, naming the
// setting, or nil.
func CheckRetention(r fsm.Retention) error {
	if r.Millis < 1 || r.Millis > fsm.MaxRetentionMillis {
		return fmt.Errorf("ended_retention: must lie between 1ms and %s, got %s", time.Duration(fsm.MaxRetentionMillis)*time.Millisecond, time.Duration(r.Millis)*time.Millisecond)
	}
	if r.MaxEnded < 0 {
		return fmt.Errorf("ended_max: must be >= 0 (0: no limit), got %d", r.MaxEnded)
	}
	if r.IdempotencyMaxKeys < 1 || r.IdempotencyMaxKeys > fsm.MaxIdempotencyMaxKeys {
		return fmt.Errorf("idempotency_max_keys: must lie between 1 and %d, got %d", fsm.MaxIdempotencyMaxKeys, r.IdempotencyMaxKeys)
	}
	return nil
}

// SetVersioner gives the ticker the cluster's view of which envelope
// versions every server applies (the cluster node, once it exists).
func (t *RetentionTicker) SetVersioner(v Versioner) { t.versions.Store(&v) }

// differs says whether got is not what the configuration asks for.
func (t *RetentionTicker) differs(got fsm.Retention) bool {
	return got.Millis != t.want.Millis || got.MaxEnded != t.want.MaxEnded ||
		got.IdempotencyMaxKeys != t.want.IdempotencyMaxKeys ||
		!got.IdempotencyMaxKeysSet && t.want.IdempotencyMaxKeys != fsm.DefaultIdempotencyMaxKeys
}

// due says whether the configured retention should be proposed now, and
// what is in force.
func (t *RetentionTicker) due() (fsm.Retention, bool) {
	got := t.fsm.Retention()
	if !t.differs(got) {
		t.waiting.Store(false)
		return got, false
	}
	v := t.versions.Load()
	if v == nil {
		return got, false
	}
	if have := (*v).CommonEnvelopeVersion(); have < fsm.RetentionVersion {
		if !t.waiting.Swap(true) {
			t.log.Warn("the configured retention of ended reservations and idempotency keys waits until every server runs a release that applies it",
				"ended_retention", time.Duration(t.want.Millis)*time.Millisecond, "ended_max", t.want.MaxEnded,
				"idempotency_max_keys", t.want.IdempotencyMaxKeys, "needs_version", fsm.RetentionVersion, "every_server_applies", have)
		}
		return got, false
	}
	return got, true
}

// Tick implements Ticker.
func (t *RetentionTicker) Tick() []byte {
	got, due := t.due()
	if !due {
		return t.next.Tick()
	}
	b, err := fsm.Encode(fsm.SetRetentionCommand(t.want))
	if err != nil {
		t.log.Error("cannot encode the retention of ended reservations", "err", err)
		return t.next.Tick()
	}
	t.log.Info("putting the configured retention of ended reservations and idempotency keys into force",
		"ended_retention", time.Duration(t.want.Millis)*time.Millisecond, "ended_max", t.want.MaxEnded,
		"idempotency_max_keys", t.want.IdempotencyMaxKeys,
		"was_retention", time.Duration(got.Millis)*time.Millisecond, "was_max", got.MaxEnded, "was_keys", got.IdempotencyMaxKeys)
	return b
}

// NextDue implements Ticker.
func (t *RetentionTicker) NextDue() (int64, bool) {
	if _, due := t.due(); due {
		return t.now().UnixMilli(), true
	}
	return t.next.NextDue()
}
