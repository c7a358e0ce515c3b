package planner

// ratioScale is the resolution of recorded release ratios: actual/requested
// duration in permille (0..1000). A booking never runs past its requested
// end, so ratios above 1000 do not occur.
const ratioScale = 1000

// DefaultPriorWeight is the weight, in pseudo-observations, of the prior
// of a ReleaseModel: before there is history every booking is assumed to
// run to its requested end (ratio 1). The prior is deliberately
// pessimistic: the relaxed policy admits nothing it could not admit
// rigidly until real early releases have been recorded, and the prior's
// influence fades as history accumulates.
const DefaultPriorWeight = 20

// DefaultMinOwnerSamples is how many completions of one owner are needed
// before that owner's own history replaces the global one.
const DefaultMinOwnerSamples = 20

// histogram counts recorded release ratios per permille bucket.
type histogram struct {
	counts [ratioScale + 1]int64
	total  int64
}

func (h *histogram) add(permille int64) {
	h.counts[min(max(permille, 0), ratioScale)]++
	h.total++
}

// atMost returns how many recorded ratios are <= permille.
func (h *histogram) atMost(permille int64) int64 {
	if permille < 0 {
		return 0
	}
	permille = min(permille, ratioScale)
	n := int64(0)
	for _, c := range h.counts[:permille+1] {
		n += c
	}
	return n
}

// ReleaseModel learns when bookings really end: the distribution of
// actual/requested duration, globally and per owner. The state is integer
// counts; probabilities are computed from them in float64, which is
// deterministic for a given platform and build (Go does not fuse or
// reorder float operations unless asked), so replicas on one platform
// agree. The zero value is not ready; use NewReleaseModel.
type ReleaseModel struct {
	global histogram
	owners map[string]*histogram
	// PriorWeight pseudo-observations at ratio 1 are added to every
	// distribution (see DefaultPriorWeight).
	PriorWeight int64
	// MinOwnerSamples: below this many completions an owner uses the
	// global distribution.
	MinOwnerSamples int64
}

// NewReleaseModel returns a model with the default prior and no history.
func NewReleaseModel() *ReleaseModel {
	return &ReleaseModel{owners: make(map[string]*histogram), PriorWeight: DefaultPriorWeight, MinOwnerSamples: DefaultMinOwnerSamples}
}

// Record adds one completion of owner: actual of requested time units
// were used. Records with requested <= 0 are ignored.
func (m *ReleaseModel) Record(owner string, requested, actual int64) {
	if requested <= 0 {
		return
	}
	r := permille(min(max(actual, 0), requested), requested)
	m.global.add(r)
	if owner == "" {
		return
	}
	h, ok := m.owners[owner]
	if !ok {
		h = &histogram{}
		m.owners[owner] = h
	}
	h.add(r)
}

// Samples returns the number of recorded completions (global).
func (m *ReleaseModel) Samples() int64 { return m.global.total }

func (m *ReleaseModel) hist(owner string) *histogram {
	if h, ok := m.owners[owner]; ok && h.total >= m.MinOwnerSamples {
		return h
	}
	return &m.global
}

// cdf returns Pr{ratio <= permille} for owner, prior included.
func (m *ReleaseModel) cdf(owner string, permille int64) float64 {
	if permille >= ratioScale {
		return 1
	}
	if permille < 0 {
		return 0
	}
	h := m.hist(owner)
	den := h.total + m.PriorWeight
	if den == 0 {
		return 0
	}
	return float64(h.atMost(permille)) / float64(den)
}

// EndsBy returns the probability that a booking of owner over
// [start, end) that has not ended by now (now >= start) releases its
// capacity at or before t. For a booking not yet started pass now = start.
func (m *ReleaseModel) EndsBy(owner string, start, end, now, t int64) float64 {
	if t >= end {
		return 1
	}
	if t <= start || t <= now {
		return 0
	}
	dur := end - start
	x := permille(t-start, dur)
	if now <= start {
		return m.cdf(owner, x)
	}
	// Condition on having run for now-start already.
	y := permille(now-start, dur) - 1
	fy := m.cdf(owner, y)
	if fy >= 1 {
		return 1
	}
	p := (m.cdf(owner, x) - fy) / (1 - fy)
	return min(max(p, 0), 1)
}

// permille returns num*1000/den for 0 <= num <= den, den > 0, without
// overflowing.
func permille(num, den int64) int64 {
	if num <= MaxTime/ratioScale {
		return num * ratioScale / den
	}
	return num / (den / ratioScale)
}
