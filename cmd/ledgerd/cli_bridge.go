package main

import (
	"fmt"
	"strings"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// materializationNote says in one line whether the site's resource
// manager (Slurm) holds a reservation, as the bridge last recorded.
func materializationNote(m *ledgerdv1.Materialization) string {
	if m == nil {
		return ""
	}
	state := strings.ToLower(strings.TrimPrefix(m.GetState().String(), "MATERIALIZATION_STATE_"))
	var sb strings.Builder
	fmt.Fprintf(&sb, "slurm: %s", state)
	if m.GetName() != "" {
		fmt.Fprintf(&sb, " %s", m.GetName())
	}
	if len(m.GetUnits()) > 0 {
		fmt.Fprintf(&sb, " on %s %s..%s", strings.Join(m.GetUnits(), ","), fmtTime(m.GetStart()), fmtTime(m.GetEnd()))
	}
	if m.GetMessage() != "" {
		fmt.Fprintf(&sb, ": %s", m.GetMessage())
	}
	fmt.Fprintf(&sb, " (recorded at version %d, %s)", m.GetVersion(), fmtTime(m.GetRecorded()))
	return sb.String()
}

// printMaterializations prints, below a reservation table, one line per
// reservation the bridge has a record of.
func printMaterializations(rs []*ledgerdv1.Reservation) {
	for _, r := range rs {
		if m := r.GetMaterialization(); m != nil {
			fmt.Fprintf(cliOut, "%s  %s\n", r.GetId(), materializationNote(m))
		}
	}
}

// printMaterializationEvent prints the record of a materialization event
// below its row.
func printMaterializationEvent(e *ledgerdv1.Event) {
	if e.GetType() == ledgerdv1.EventType_EVENT_TYPE_MATERIALIZATION {
		fmt.Fprintf(cliOut, "  %s\n", materializationNote(e.GetReservation().GetMaterialization()))
	}
}
