package peers

import (
	"encoding/binary"
	"fmt"

	"github.com/ledgerd/ledgerd/benchmarks/service"
)

// Booking states stored by the peers.
const (
	stateHeld      = 1
	stateCommitted = 2
)

// entry is one stored booking.
type entry struct {
	ID                 uint64
	Start, End, Amount int64
	State              byte
}

// resourceDoc is the value stored per resource in etcd.
type resourceDoc struct {
	Capacity int64
	Entries  []entry
}

const entrySize = 8*4 + 1

func (d *resourceDoc) encode() []byte {
	b := make([]byte, 0, 8+len(d.Entries)*entrySize)
	b = binary.LittleEndian.AppendUint64(b, uint64(d.Capacity))
	for _, e := range d.Entries {
		b = binary.LittleEndian.AppendUint64(b, e.ID)
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Start))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.End))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Amount))
		b = append(b, e.State)
	}
	return b
}

func decodeDoc(b []byte) (*resourceDoc, error) {
	if len(b) < 8 || (len(b)-8)%entrySize != 0 {
		return nil, fmt.Errorf("resource value: %d bytes is not a capacity plus whole entries", len(b))
	}
	d := &resourceDoc{Capacity: int64(binary.LittleEndian.Uint64(b))}
	for p := b[8:]; len(p) > 0; p = p[entrySize:] {
		d.Entries = append(d.Entries, entry{
			ID:     binary.LittleEndian.Uint64(p),
			Start:  int64(binary.LittleEndian.Uint64(p[8:])),
			End:    int64(binary.LittleEndian.Uint64(p[16:])),
			Amount: int64(binary.LittleEndian.Uint64(p[24:])),
			State:  p[32],
		})
	}
	return d, nil
}

// intervals returns the bookings as intervals, leaving out skip (0: none).
func (d *resourceDoc) intervals(skip uint64) []service.Interval {
	out := make([]service.Interval, 0, len(d.Entries))
	for _, e := range d.Entries {
		if e.ID != skip {
			out = append(out, service.Interval{Start: e.Start, End: e.End, Amount: e.Amount})
		}
	}
	return out
}

func (d *resourceDoc) find(id uint64) int {
	for i, e := range d.Entries {
		if e.ID == id {
			return i
		}
	}
	return -1
}
