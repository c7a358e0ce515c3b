package jepsen

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"
)

// memLedger is an in-process ledger for testing the harness itself: a
// mutex around the sequential model, so it is linearizable by construction,
// unless staleReads is set, in which case get and find are answered from a
// copy of the state that lags behind by a few writes (a classic bug).
type memLedger struct {
	mu         sync.Mutex
	model      *Ledger
	state      State
	lagged     State
	writes     int
	staleReads bool
	// unknownRate is the probability that a write's answer is lost (it is
	// applied or not, at random) and reported as unknown.
	unknownRate float64
	rng         *rand.Rand
	known       map[string]bool
}

func newMemLedger(caps map[string]int64, stale bool, unknownRate float64, seed uint64) *memLedger {
	return &memLedger{
		model: &Ledger{Capacity: caps, Decide: ReferenceDecide}, staleReads: stale,
		unknownRate: unknownRate, rng: rand.New(rand.NewPCG(seed, 9)), known: map[string]bool{},
	}
}

var errLost = errors.New("answer lost")

func (m *memLedger) Invoke(ctx context.Context, in Input) (Output, error) {
	time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
	m.mu.Lock()
	defer m.mu.Unlock()
	read := in.Op == OpGet || in.Op == OpFind
	if read && m.staleReads {
		out, _ := m.model.predict(m.lagged, in)
		return out, nil
	}
	lost := !read && m.rng.Float64() < m.unknownRate
	if lost && m.rng.IntN(2) == 0 {
		return Output{Code: CodeUnknown}, errLost // never applied
	}
	out, next := m.model.predict(m.state, in)
	m.state = next
	if !read {
		m.writes++
		if m.writes%25 == 0 {
			m.lagged = m.state
		}
	}
	if (in.Op == OpHold || in.Op == OpReserve) && out.Code == CodeOK {
		m.known[in.ID] = true
	}
	if lost {
		return Output{Code: CodeUnknown}, errLost // applied, answer lost
	}
	return out, nil
}

func (m *memLedger) Known(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.known[id]
}

func (m *memLedger) List(context.Context) ([]Reservation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Reservation
	m.state.each(func(r record) bool {
		if r.Status == "" {
			return true
		}
		res := Reservation{ID: r.ID, ServerID: "s-" + r.ID, Parts: r.Shape.Parts, Start: r.Shape.Start, End: r.Shape.End, Status: r.Status}
		if r.Status == StatusHeld {
			res.HoldExpiresAt = time.Now().Add(time.Hour).UnixMilli()
		}
		if r.Pending != nil {
			res.Pending = &PendingShape{Parts: r.Pending.Parts, Start: r.Pending.Start, End: r.Pending.End}
		}
		out = append(out, res)
		return true
	})
	return out, nil
}

func (m *memLedger) Leader(context.Context) (string, error) { return "n1", nil }

func (m *memLedger) EnsureResource(_ context.Context, name string, capacity int64) error {
	if m.model.Capacity[name] != capacity {
		return errors.New("unexpected resource " + name)
	}
	return nil
}
