package series

// Split divides the series at the instant at, for "cancel or modify the
// whole series from a date on": before holds the occurrences that start
// before at, after those that start at or after it; either is nil when it
// would be empty. Both are specs of this package, valid for Compile:
//
//   - before is this spec with End = at (it becomes bounded, so its
//     Horizon is 0);
//   - after keeps Start, so the rhythm of the rule is kept, and sets
//     NotBefore = at; under COUNT its COUNT is what before has not used.
//     A modification changes after (its Duration, or its Rule) before
//     compiling it as a new series.
//
// The union of their occurrences is this series' occurrences, with the
// same keys and instants (TestSplitKeepsEveryOccurrence).
func (s *Series) Split(at int64) (before, after *Spec) {
	nBefore := 0
	hasAfter := false
	s.walk(minInt64, func(o Occurrence) bool {
		if o.Start < at {
			nBefore++
			return true
		}
		hasAfter = true
		return false
	})
	if nBefore > 0 {
		b := s.spec
		if b.End == 0 || at < b.End {
			b.End = at
		}
		b.Horizon = 0
		before = &b
	}
	if hasAfter {
		a := s.spec
		a.NotBefore = max(a.NotBefore, at)
		if s.rule.count != 0 {
			r := *s.rule
			r.count -= nBefore
			a.Rule = r.String()
		}
		after = &a
	}
	return before, after
}
