package planner

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// Data-driven tests of the unit layer: scripts in testdata/units/ use the
// format of TestDataDriven (command, ----, expected output) and run once
// with the list and once with the indexed global timeline; both must
// print the same. Rewrite with
//
//	go test ./planner -run TestUnitsDataDriven -rewrite
//
// Commands (times accept "max"; policy= defaults to refuse):
//
//	units n= [fit=best|lowest]                        NewUnitSchedule (n1..nN)
//	book id= start= end= on=n1,n2 [pinned]            Book (movable unless pinned)
//	reserve id= qty= dur= nb= [dl=] [policy=] [pinned] Reserve
//	find qty= dur= nb= [dl=] [policy=]                Find
//	release id=                                       Release
//	pin id= / unpin id=                               SetMovable(false / true)
//	advance now=                                      Advance
//	down id= unit= from= to= [policy=]                AddDown
//	up id=                                            RemoveDown
//	show from= to=                                    one row per unit, one column per instant:
//	                                                  the booking's first letter, # down, . free;
//	                                                  then the summed free capacity
func TestUnitsDataDriven(t *testing.T) {
	runScriptsPerTimeline(t, "testdata/units/*.txt", func(t *testing.T, path string, f TimelineFactory) func(int, string) string {
		var u *UnitSchedule
		return func(line int, cmd string) string {
			out := runUnitsCmd(t, &u, f, cmd)
			if u != nil {
				if err := checkUnits(u); err != nil {
					t.Fatalf("%s:%d: %v", path, line, err)
				}
			}
			return out
		}
	})
}

func runUnitsCmd(t *testing.T, up **UnitSchedule, f TimelineFactory, line string) string {
	fields := strings.Fields(line)
	args := map[string]string{"policy": "refuse"}
	for _, fl := range fields[1:] {
		k, v, _ := strings.Cut(fl, "=")
		args[k] = v
	}
	num := func(k string) int64 {
		if args[k] == "max" {
			return MaxTime
		}
		n, err := strconv.ParseInt(args[k], 10, 64)
		if err != nil {
			t.Fatalf("%q: bad %s=%q", line, k, args[k])
		}
		return n
	}
	policy := map[string]UnitPolicy{"refuse": UnitRefuse, "remap": UnitRemap}[args["policy"]]
	_, pinned := args["pinned"]
	errOut := func(err error) string {
		var fe *FieldError
		var ce *UnitConflictError
		var ue *UnmappableError
		switch {
		case errors.As(err, &fe):
			return "invalid " + fe.Field
		case errors.As(err, &ue):
			return "refused: " + ue.Decision.Reason()
		case errors.As(err, &ce):
			return fmt.Sprintf("conflict: bookings %v downs %v", ce.Bookings, ce.Downs)
		}
		return "error: " + err.Error()
	}
	remaps := func(rs []Remap) string {
		var b strings.Builder
		for _, r := range rs {
			fmt.Fprintf(&b, "\nmoved %s %v -> %v", r.ID, r.From, r.To)
		}
		return b.String()
	}
	req := func() UnitRequest {
		r := UnitRequest{Amount: num("qty"), Duration: num("dur"), NotBefore: num("nb"), Deadline: MaxTime, Movable: !pinned}
		if _, ok := args["dl"]; ok {
			r.Deadline = num("dl")
		}
		return r
	}
	decision := func(d UnitDecision) string {
		return fmt.Sprintf("start=%d units=%v%s", d.Start, d.Units, remaps(d.Remaps))
	}
	u := *up
	switch fields[0] {
	case "units":
		names := make([]string, num("n"))
		for i := range names {
			names[i] = fmt.Sprintf("n%d", i+1)
		}
		fit := map[string]FitRule{"": FitBest, "best": FitBest, "lowest": FitLowest}[args["fit"]]
		v, err := NewUnitSchedule(names, 0, UnitConfig{Fit: fit, Factory: f})
		if err != nil {
			return errOut(err)
		}
		*up = v
		return "ok"
	case "book":
		if err := u.Book(UnitBooking{ID: args["id"], Start: num("start"), End: num("end"), Units: strings.Split(args["on"], ","), Movable: !pinned}); err != nil {
			return errOut(err)
		}
		return "ok"
	case "reserve":
		d, err := u.Reserve(args["id"], req(), policy)
		if err != nil {
			return errOut(err)
		}
		return decision(d)
	case "find":
		d, err := u.Find(req(), policy)
		if err != nil {
			return errOut(err)
		}
		if !d.Fits {
			return "refused: " + d.Reason()
		}
		return decision(d)
	case "release":
		if _, err := u.Release(args["id"]); err != nil {
			return errOut(err)
		}
		return "ok"
	case "pin", "unpin":
		if err := u.SetMovable(args["id"], fields[0] == "unpin"); err != nil {
			return errOut(err)
		}
		return "ok"
	case "advance":
		u.Advance(num("now"))
		return fmt.Sprintf("origin=%d live=%d", u.Origin(), u.Len())
	case "down":
		rs, err := u.AddDown(UnitDown{ID: args["id"], Unit: args["unit"], From: num("from"), To: num("to")}, policy)
		if err != nil {
			return errOut(err)
		}
		return "ok" + remaps(rs)
	case "up":
		if err := u.RemoveDown(args["id"]); err != nil {
			return errOut(err)
		}
		return "ok"
	case "show":
		return showUnits(u, num("from"), num("to"))
	}
	t.Fatalf("unknown command %q", line)
	return ""
}

// showUnits draws [from, to) one column per instant.
func showUnits(u *UnitSchedule, from, to int64) string {
	var b strings.Builder
	for x, name := range u.names {
		fmt.Fprintf(&b, "%-4s|", name)
		for t := from; t < to; t++ {
			c := byte('.')
			u.lines[x].each(t, t+1, func(sp span) {
				if sp.r.down {
					c = '#'
				} else {
					c = sp.r.id[0]
				}
			})
			b.WriteByte(c)
		}
		b.WriteString("|\n")
	}
	b.WriteString("free|")
	for t := from; t < to; t++ {
		if t < u.origin {
			b.WriteByte(' ')
			continue
		}
		b.WriteString(strconv.FormatInt(u.global.MinFree(t, t+1), 36))
	}
	b.WriteString("|")
	return b.String()
}
