package cluster

import (
	"context"
	"log/slog"
	"time"
)

// dueRecheck bounds how long the due-time ticker sleeps on one reading of
// NextDue. Its timer runs on the monotonic clock while due times are on
// the wall clock (Config.Now), so a wall clock stepped forward would
// otherwise delay due work until the next applied entry; with nothing
// due the ticker sleeps until an entry is applied, however long. One
// second keeps a stepped clock noticed as soon as the old fixed tick did
// (chaos tests step it on purpose); a wake-up that finds nothing due
// writes nothing to the log.
const dueRecheck = time.Second

// tickLoop applies Config.Tick while this node leads; ctx ends with the
// leadership term or the node. With Config.NextDue the tick follows the
// FSM's next due time (dueTicker), otherwise it fires every TickInterval.
func (n *Node) tickLoop(ctx context.Context) {
	if n.cfg.Tick == nil {
		return
	}
	if n.cfg.NextDue == nil {
		n.fixedTicks(ctx)
		return
	}
	d := dueTicker{
		nextDue: n.cfg.NextDue,
		now:     n.cfg.Now,
		changed: n.fsm.changedCh,
		tick: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, n.cfg.LeaderWait)
			defer cancel()
			return n.applyLocalBatch(ctx, [][]byte{n.cfg.Tick()}, false)[0].Err
		},
		minGap: n.cfg.TickInterval,
		log:    n.log,
	}
	d.run(ctx)
}

// fixedTicks applies the tick every TickInterval: the behaviour without
// NextDue.
func (n *Node) fixedTicks(ctx context.Context) {
	t := time.NewTicker(n.cfg.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			tctx, cancel := context.WithTimeout(ctx, n.cfg.TickInterval)
			if err := n.applyLocalBatch(tctx, [][]byte{n.cfg.Tick()}, false)[0].Err; err != nil && ctx.Err() == nil {
				n.log.Warn("tick failed", "err", err)
			}
			cancel()
		}
	}
}

// dueTicker applies a tick when the FSM says time-triggered work is due.
// Everything it consumes is a function, so tests drive it with a fake FSM
// and, under testing/synctest, a fake clock.
type dueTicker struct {
	// nextDue is Config.NextDue: the earliest due log time (Unix ms of
	// now's clock), ok=false when nothing is due.
	nextDue func() (atMillis int64, ok bool)
	// now is the leader's stamping clock (Config.Now).
	now func() time.Time
	// changed returns a channel closed when the FSM next applies an entry
	// (trackedFSM.changedCh).
	changed func() <-chan struct{}
	// tick applies one tick entry and returns once it is applied (or
	// failed); the FSM has then applied it, so nextDue reflects it.
	tick func(ctx context.Context) error
	// minGap is the least time from the start of one tick to the start
	// of the next (Config.TickInterval), measured on the monotonic clock.
	minGap time.Duration
	log    *slog.Logger
}

// run waits for due work and ticks until ctx ends. It reads nextDue once
// per wake-up: at start, whenever the FSM applies an entry, when the timer
// for the due time (or the minimum gap) fires, and at least every
// dueRecheck while something is due. It never ticks while nothing is due.
func (d dueTicker) run(ctx context.Context) {
	var last time.Time // monotonic start of the last tick; zero: none yet
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		// Take the channel before reading nextDue: an entry applied in
		// between closes it, so no change is missed.
		changed := d.changed()
		at, ok := d.nextDue()
		var fire <-chan time.Time
		if ok {
			wait := time.UnixMilli(at).Sub(d.now())
			if !last.IsZero() {
				wait = max(wait, d.minGap-time.Since(last))
			}
			if wait <= 0 {
				last = time.Now()
				if err := d.tick(ctx); err != nil && ctx.Err() == nil && d.log != nil {
					d.log.Warn("tick failed", "err", err)
				}
				continue
			}
			timer.Reset(min(wait, dueRecheck))
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-fire:
		}
		timer.Stop()
	}
}
