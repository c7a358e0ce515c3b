package fsm

import (
	"errors"
	"fmt"
	"slices"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/proto"
)

// Materialization: whether the site's resource manager (Slurm) holds a
// reservation is replicated state, written by the bridge on the leader
// through TYPE_SET_MATERIALIZATION and stored on the reservation's row
// (Reservation.materialization), so every head node, get, watch and the UI
// see it.
//
// A record that says MATERIALIZED with exactly the units and window the
// row holds pins the booking on its unit schedules: admission under the
// REMAP unit policy never moves it, since its nodes are written in the
// resource manager. Whether a booking is pinned is a function of its row
// alone (pinnedByRecord), enforced after every entry for the rows the entry
// stored and at restore for every row, so a replica restored from a
// snapshot decides exactly like one that applied the log.

// versionBridge is the envelope version of TYPE_SET_MATERIALIZATION.
const versionBridge uint32 = 4

// Limits of a SetMaterialization entry.
const (
	maxMaterializationUpdates = 1024
	maxMaterializationMessage = 1024
	maxMaterializationName    = 200
	maxMaterializationUnits   = 65536
)

// checkSetMaterialization runs the stateless checks of the payload.
func checkSetMaterialization(c *fsmv1.SetMaterialization, ver uint32) *FieldError {
	ups := c.GetUpdates()
	if len(ups) == 0 || len(ups) > maxMaterializationUpdates {
		return fieldErr("set_materialization.updates", fmt.Sprintf("must hold 1..%d updates, has %d", maxMaterializationUpdates, len(ups)))
	}
	seen := make(map[string]bool, len(ups))
	for i, u := range ups {
		f := fmt.Sprintf("set_materialization.updates[%d]", i)
		if fe := checkTargetID(f+".id", u.GetId(), ver); fe != nil {
			return fe
		}
		if seen[u.GetId()] {
			return fieldErr(f+".id", fmt.Sprintf("%q listed twice", u.GetId()))
		}
		seen[u.GetId()] = true
		m := u.GetMaterialization()
		switch m.GetState() {
		case fsmv1.Materialization_STATE_PENDING, fsmv1.Materialization_STATE_MATERIALIZED, fsmv1.Materialization_STATE_FAILED, fsmv1.Materialization_STATE_REMOVED:
		default:
			return fieldErr(f+".materialization.state", fmt.Sprintf("must be PENDING, MATERIALIZED, FAILED or REMOVED, is %d", int32(m.GetState())))
		}
		if len(m.GetMessage()) > maxMaterializationMessage {
			return fieldErr(f+".materialization.message", fmt.Sprintf("longer than %d bytes", maxMaterializationMessage))
		}
		if len(m.GetName()) > maxMaterializationName {
			return fieldErr(f+".materialization.name", fmt.Sprintf("longer than %d bytes", maxMaterializationName))
		}
		if len(m.GetUnits()) > maxMaterializationUnits {
			return fieldErr(f+".materialization.units", fmt.Sprintf("more than %d units", maxMaterializationUnits))
		}
		for j, n := range m.GetUnits() {
			if why := validUnitName(n); why != "" {
				return fieldErr(fmt.Sprintf("%s.materialization.units[%d]", f, j), why)
			}
			if j > 0 && n <= m.GetUnits()[j-1] {
				return fieldErr(fmt.Sprintf("%s.materialization.units[%d]", f, j), "units must be sorted by name and distinct")
			}
		}
		if m.GetStartMillis() < 0 || m.GetEndMillis() < m.GetStartMillis() || m.GetEndMillis() > MaxTimeMillis {
			return fieldErr(f+".materialization.end_millis", "the window must satisfy 0 <= start <= end <= 9999-12-31")
		}
	}
	return nil
}

// setMaterialization applies TYPE_SET_MATERIALIZATION: each listed live
// reservation gets the new record, stamped with the entry's index and log
// time, and one TYPE_MATERIALIZATION_CHANGED event. Unknown reservations
// are skipped, and terminal ones unless the record says REMOVED (the
// bridge's round may have raced a cancel), and so is a record equal to
// the stored one.
func (s *state) setMaterialization(cmd *fsmv1.Command) *fsmv1.Result {
	c := cmd.GetSetMaterialization()
	if fe := checkSetMaterialization(c, s.ver); fe != nil {
		return fe.result()
	}
	res := &fsmv1.Result{Status: fsmv1.Result_STATUS_OK}
	for _, u := range c.GetUpdates() {
		r, ok := s.resv.get(u.GetId())
		if !ok || isTerminal(r.GetState()) && u.GetMaterialization().GetState() != fsmv1.Materialization_STATE_REMOVED {
			continue
		}
		m := proto.CloneOf(u.GetMaterialization())
		m.Version, m.AtMillis = 0, 0
		if old := r.GetMaterialization(); old != nil {
			o := proto.CloneOf(old)
			o.Version, o.AtMillis = 0, 0
			if proto.Equal(o, m) {
				continue
			}
		}
		m.Version, m.AtMillis = s.index, s.now
		n := s.change(r)
		n.Materialization = m
		s.put(u.GetId(), n)
		s.emit(fsmv1.Event_TYPE_MATERIALIZATION_CHANGED, n, nil)
	}
	return res
}

// rowUnits returns the units a row holds (its parts', not its pending
// modification's), sorted by name.
func rowUnits(r *fsmv1.Reservation) []string {
	var out []string
	for _, p := range r.GetParts() {
		out = append(out, p.GetUnits()...)
	}
	slices.Sort(out)
	return out
}

// pinnedByRecord reports whether a row's materialization record pins its
// booking: MATERIALIZED with the units the row holds and its window
// rounded inwards to whole seconds (what the bridge writes).
func pinnedByRecord(r *fsmv1.Reservation) bool {
	m := r.GetMaterialization()
	if m.GetState() != fsmv1.Materialization_STATE_MATERIALIZED {
		return false
	}
	s, e := wholeSecondsInwards(r.GetStartMillis(), r.GetEndMillis())
	return m.GetStartMillis() == s && m.GetEndMillis() == e && slices.Equal(m.GetUnits(), rowUnits(r))
}

// wholeSecondsInwards rounds [start, end) inwards to whole seconds, in
// milliseconds (the bridge's Window).
func wholeSecondsInwards(start, end int64) (int64, int64) {
	s := start / 1000 * 1000
	if s < start {
		s += 1000
	}
	e := end / 1000 * 1000
	if e > end {
		e -= 1000
	}
	return s, e
}

// notePin remembers that row id, which carries a materialization record,
// was stored by the current entry (put calls it).
func (s *state) notePin(id string) {
	s.pinTouched = append(s.pinTouched, id)
}

// syncPins sets the movable flag of every unit booking whose row the
// current entry stored with a record to what the row says
// (pinnedByRecord). Called once at the end of every entry, so the order
// in which an entry re-booked and re-stored a row does not matter.
func (s *state) syncPins() {
	if len(s.pinTouched) == 0 {
		return
	}
	slices.Sort(s.pinTouched)
	for _, id := range slices.Compact(s.pinTouched) {
		if r, ok := s.resv.get(id); ok {
			s.pinRow(id, r)
		}
	}
	clear(s.pinTouched)
	s.pinTouched = s.pinTouched[:0]
}

// pinRow sets the movable flag of row id's booking on every unit
// schedule it is booked on.
func (s *state) pinRow(id string, r *fsmv1.Reservation) {
	if s.units == nil || isTerminal(r.GetState()) {
		return
	}
	movable := !pinnedByRecord(r)
	for _, p := range r.GetParts() {
		if us := s.units[p.GetResource()]; us != nil {
			// A booking that has ended is no longer on the schedule.
			_ = us.SetMovable(id, movable)
		}
	}
}

// restorePins pins, after a restore, the bookings whose rows' records say
// so (collectUnits books every row movable).
func (s *state) restorePins(ids []string) {
	for _, id := range ids {
		if r, ok := s.resv.get(id); ok {
			s.pinRow(id, r)
		}
	}
}

// checkRecord verifies the bytes of a stored materialization record as
// restore reads them (scanRow): a message with no unknown fields, a known
// state, in the deterministic encoding, so that the row decodes and
// re-encodes to the same bytes.
func checkRecord(b string) error {
	m := new(fsmv1.Materialization)
	if err := proto.Unmarshal([]byte(b), m); err != nil {
		return err
	}
	if len(m.ProtoReflect().GetUnknown()) > 0 {
		return errors.New("unknown fields")
	}
	switch m.GetState() {
	case fsmv1.Materialization_STATE_PENDING, fsmv1.Materialization_STATE_MATERIALIZED, fsmv1.Materialization_STATE_FAILED, fsmv1.Materialization_STATE_REMOVED:
	default:
		return fmt.Errorf("state %d unknown", int32(m.GetState()))
	}
	again, err := marshalOpts.Marshal(m)
	if err != nil {
		return err
	}
	if string(again) != b {
		return errNotCanonical
	}
	return nil
}
