package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc/client"
)

func init() {
	register("reserve", "Book capacity in one step (hold + commit)", runReserve)
	register("hold", "Hold capacity until commit, abort or the hold TTL", runHold)
	register("commit", "Commit a hold or a pending modification", func(a []string) int { return runTransition("commit", a) })
	register("abort", "Abort a hold or a pending modification", func(a []string) int { return runTransition("abort", a) })
	register("cancel", "Cancel a committed reservation", func(a []string) int { return runTransition("cancel", a) })
	register("complete", "End a committed or active reservation early and give the rest back", runComplete)
	register("modify", "Hold a new shape for a reservation (commit or abort it next)", runModify)
	register("get", "Show one reservation", runGet)
	register("list", "List reservations (filter by resource, tenant, state, time)", runList)
	register("find", "Find the earliest start that would fit, without booking", runFind)
	register("offers", "List the first feasible starts, without booking", runOffers)
	register("availability", "Chart the free capacity of a resource over a window", runAvailability)
	register("watch", "Stream ledger events from a version on", runWatch)
	register("history", "Show the recorded events, of one reservation or all", runHistory)
}

// book runs reserve and hold, which share their flags.
func book(name string, args []string, hold bool) int {
	fs, cf := newFlagSet(name, "")
	var sf shapeFlags
	sf.register(fs)
	labels := kvFlag{}
	fs.Var(labels, "label", "label key=value (repeatable)")
	key := fs.String("key", "", "idempotency key (default: a random one, reused on retries)")
	var ttl time.Duration
	var series seriesFlags
	if hold {
		fs.Var(&durFlag{&ttl}, "ttl", "hold TTL (default: the server's)")
	} else {
		series.register(fs)
	}
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if !hold && series.used(fs) {
		if fs.NArg() != 0 {
			return usageErr(fs, "unexpected arguments %q", fs.Args())
		}
		return reserveSeries(fs, cf, &sf, &series, labels, *key)
	}
	if fs.NArg() != 0 {
		return usageErr(fs, "unexpected arguments %q", fs.Args())
	}
	if err := checkPositive(fs, "ttl", ttl); err != nil {
		return usageErr(fs, "%v", err)
	}
	shape, err := sf.shape()
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	return cf.withClient(name, func(ctx context.Context, c *client.Client) error {
		var r *ledgerdv1.Reservation
		var moved []*ledgerdv1.MovedJob
		if hold {
			req := &ledgerdv1.HoldRequest{Shape: shape, Labels: labels, IdempotencyKey: *key}
			if ttl > 0 {
				req.HoldTtl = durationpb.New(ttl)
			}
			resp, err := c.HoldMoving(ctx, req)
			if err != nil {
				return err
			}
			r, moved = resp.Reservation, resp.Moved
		} else {
			resp, err := c.ReserveMoving(ctx, &ledgerdv1.ReserveRequest{Shape: shape, Labels: labels, IdempotencyKey: *key})
			if err != nil {
				return err
			}
			r, moved = resp.Reservation, resp.Moved
		}
		printReservations(cf.json, r)
		printMoved(cf.json, moved)
		return nil
	})
}

func runReserve(args []string) int { return book("reserve", args, false) }
func runHold(args []string) int    { return book("hold", args, true) }

// runTransition runs commit, abort and cancel.
func runTransition(name string, args []string) int {
	fs, cf := newFlagSet(name, "ID")
	key := fs.String("key", "", "idempotency key (default: a random one)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usageErr(fs, "want exactly one reservation ID")
	}
	return cf.withClient(name, func(ctx context.Context, c *client.Client) error {
		op := map[string]func(context.Context, string, string) (*ledgerdv1.Reservation, error){
			"commit": c.Commit, "abort": c.Abort, "cancel": c.Cancel,
		}[name]
		r, err := op(ctx, fs.Arg(0), *key)
		if err == nil {
			printReservations(cf.json, r)
		}
		return err
	})
}

// runComplete ends a reservation early: now, or at -at (an instant before
// its booked end; the reservation then completes by itself at that time).
func runComplete(args []string) int {
	fs, cf := newFlagSet("complete", "ID")
	key := fs.String("key", "", "idempotency key (default: a random one)")
	var at time.Time
	fs.Var(&timeFlag{&at}, "at", "when the work ends: RFC 3339, now, or +duration (default: now)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usageErr(fs, "want exactly one reservation ID")
	}
	return cf.withClient("complete", func(ctx context.Context, c *client.Client) error {
		r, err := c.Complete(ctx, fs.Arg(0), at, *key)
		if err == nil {
			printReservations(cf.json, r)
		}
		return err
	})
}

func runModify(args []string) int {
	fs, cf := newFlagSet("modify", "ID")
	var sf shapeFlags
	sf.register(fs)
	key := fs.String("key", "", "idempotency key (default: a random one)")
	var ttl time.Duration
	fs.Var(&durFlag{&ttl}, "ttl", "TTL of the held new shape (default: the server's)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usageErr(fs, "want exactly one reservation ID")
	}
	if err := checkPositive(fs, "ttl", ttl); err != nil {
		return usageErr(fs, "%v", err)
	}
	shape, err := sf.shape()
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	req := &ledgerdv1.ModifyRequest{Id: fs.Arg(0), Shape: shape, IdempotencyKey: *key}
	if ttl > 0 {
		req.HoldTtl = durationpb.New(ttl)
	}
	return cf.withClient("modify", func(ctx context.Context, c *client.Client) error {
		r, err := c.Modify(ctx, req)
		if err == nil {
			printReservations(cf.json, r)
		}
		return err
	})
}

func runGet(args []string) int {
	fs, cf := newFlagSet("get", "ID")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usageErr(fs, "want exactly one reservation ID")
	}
	return cf.withClient("get", func(ctx context.Context, c *client.Client) error {
		r, err := c.Get(ctx, fs.Arg(0))
		if err == nil {
			printReservations(cf.json, r)
		}
		return err
	})
}

// parseStates reads "held,committed".
func parseStates(s string) ([]ledgerdv1.ReservationState, error) {
	var out []ledgerdv1.ReservationState
	for _, name := range strings.Split(s, ",") {
		name = strings.ToUpper(strings.TrimSpace(name))
		if name == "" {
			continue
		}
		v, ok := ledgerdv1.ReservationState_value["RESERVATION_STATE_"+name]
		if !ok || v == 0 {
			return nil, fmt.Errorf("-state: unknown state %q (held, committed, active, degraded, completed, aborted, expired, cancelled, pending_approval, denied)", name)
		}
		out = append(out, ledgerdv1.ReservationState(v))
	}
	return out, nil
}

func runList(args []string) int {
	fs, cf := newFlagSet("list", "")
	resource := fs.String("resource", "", "only reservations on this resource")
	tenant := fs.String("tenant", "", "only this tenant's (operators)")
	states := fs.String("state", "", "only these states, comma-separated (e.g. held,committed)")
	var from, to time.Time
	fs.Var(&timeFlag{&from}, "from", "only reservations ending after this time")
	fs.Var(&timeFlag{&to}, "to", "only reservations starting before this time")
	limit := fs.Int("limit", 100, "page size")
	all := fs.Bool("all", false, "follow pages and print everything")
	page := fs.String("page", "", "page token from a previous list")
	seriesID := fs.String("series", "", "only the occurrences of this standing reservation")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageErr(fs, "unexpected arguments %q", fs.Args())
	}
	st, err := parseStates(*states)
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	req := &ledgerdv1.ListRequest{Resource: *resource, Tenant: *tenant, States: st, PageSize: int32(*limit), PageToken: *page, SeriesId: *seriesID}
	if !from.IsZero() {
		req.From = timestamppb.New(from)
	}
	if !to.IsZero() {
		req.To = timestamppb.New(to)
	}
	return cf.withClient("list", func(ctx context.Context, c *client.Client) error {
		var rs []*ledgerdv1.Reservation
		next := ""
		if *all {
			var err error
			if rs, err = c.ListAll(ctx, req); err != nil {
				return err
			}
		} else {
			resp, err := c.List(ctx, req)
			if err != nil {
				return err
			}
			rs, next = resp.Reservations, resp.NextPageToken
		}
		printReservations(cf.json, rs...)
		if next != "" && !cf.json {
			fmt.Fprintf(cliErr, "more: ledgerd list -page %s (or -all)\n", next)
		}
		return nil
	})
}

func runFind(args []string) int {
	fs, cf := newFlagSet("find", "")
	var sf shapeFlags
	sf.register(fs)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	shape, err := sf.shape()
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	fits := false
	code := cf.withClient("find", func(ctx context.Context, c *client.Client) error {
		f, err := c.Find(ctx, shape)
		if err != nil {
			return err
		}
		if cf.json {
			printJSON(f)
		} else if f.Fits {
			fmt.Fprintf(cliOut, "fits at %s\n", fmtTime(f.Start))
		} else if f.LaterStart != nil {
			fmt.Fprintf(cliOut, "no fit in the window; earliest start without the deadline: %s\n", fmtTime(f.LaterStart))
		} else {
			fmt.Fprintln(cliOut, "no fit")
		}
		fits = f.Fits
		return nil
	})
	if code == exitOK && !fits {
		return exitRejected
	}
	return code
}

func runOffers(args []string) int {
	fs, cf := newFlagSet("offers", "")
	var sf shapeFlags
	sf.register(fs)
	n := fs.Int("n", 5, "how many offers (1..100)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	shape, err := sf.shape()
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	found := false
	code := cf.withClient("offers", func(ctx context.Context, c *client.Client) error {
		offers, err := c.Offers(ctx, shape, *n)
		if err != nil {
			return err
		}
		// Say why there are fewer than asked: the free capacity offers
		// only so many distinct starts inside the window.
		switch {
		case len(offers) == 0 && cf.json:
			printErrJSON(cliError{Command: "offers", Code: "rejected", Message: "no start fits in the window", Exit: exitRejected})
		case len(offers) == 0:
			fmt.Fprintln(cliErr, "ledgerd offers: no start fits in the window (widen it with -before, or ask find for the earliest start after it)")
		case len(offers) < *n && !cf.json:
			fmt.Fprintf(cliErr, "ledgerd offers: only %d of the %d starts asked for fit in the window\n", len(offers), *n)
		}
		if cf.json {
			printJSON(&ledgerdv1.OffersResponse{Offers: offers})
		} else {
			w := table()
			fmt.Fprintln(w, "#\tSTART\tEND")
			for i, o := range offers {
				fmt.Fprintf(w, "%d\t%s\t%s\n", i+1, fmtTime(o.Start), fmtTime(o.End))
			}
			w.Flush()
		}
		found = len(offers) > 0
		return nil
	})
	if code == exitOK && !found {
		return exitRejected
	}
	return code
}

func runAvailability(args []string) int {
	fs, cf := newFlagSet("availability", "RESOURCE")
	var from, to time.Time
	fs.Var(&timeFlag{&from}, "from", "window start (default now)")
	fs.Var(&timeFlag{&to}, "to", "window end (default from + 24h)")
	width := fs.Int("width", 72, "chart width in columns")
	height := fs.Int("height", 10, "chart height in rows")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usageErr(fs, "want exactly one resource name")
	}
	if *width < 8 || *height < 2 {
		return usageErr(fs, "-width must be >= 8 and -height >= 2")
	}
	if from.IsZero() {
		from = cliNow()
	}
	if to.IsZero() {
		to = from.Add(24 * time.Hour)
	}
	return cf.withClient("availability", func(ctx context.Context, c *client.Client) error {
		a, err := c.Availability(ctx, &ledgerdv1.AvailabilityRequest{Resource: fs.Arg(0), From: timestamppb.New(from), To: timestamppb.New(to)})
		if err != nil {
			return err
		}
		if cf.json {
			printJSON(a)
		} else {
			fmt.Fprint(cliOut, chart(a, from, to, *width, *height))
		}
		return nil
	})
}

// chart draws the free-capacity step function as rows of '#' (free) over
// time columns; each column shows the minimum free capacity in its slice.
func chart(a *ledgerdv1.AvailabilityResponse, from, to time.Time, width, height int) string {
	capacity := a.Resource.GetCapacity()
	span := to.Sub(from)
	cols := make([]int64, width)
	for i := range cols {
		lo := from.Add(span * time.Duration(i) / time.Duration(width))
		hi := from.Add(span * time.Duration(i+1) / time.Duration(width))
		cols[i] = -1
		for _, b := range a.Blocks {
			if b.Start.AsTime().Before(hi) && b.End.AsTime().After(lo) && (cols[i] < 0 || b.Free < cols[i]) {
				cols[i] = b.Free
			}
		}
		if cols[i] < 0 {
			cols[i] = 0
		}
		capacity = max(capacity, cols[i])
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: free %s over %s .. %s (capacity %d)\n", a.Resource.GetName(), unitOr(a.Resource.GetUnit()), from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), a.Resource.GetCapacity())
	label := len(fmt.Sprint(capacity))
	for row := height; row >= 1; row-- {
		level := (capacity*int64(row) + int64(height) - 1) / int64(height) // ceil
		fmt.Fprintf(&sb, "%*d |", label, level)
		for _, v := range cols {
			if capacity > 0 && v*int64(height) >= int64(row)*capacity {
				sb.WriteByte('#')
			} else {
				sb.WriteByte(' ')
			}
		}
		sb.WriteByte('\n')
	}
	fmt.Fprintf(&sb, "%*s +%s\n", label, "", strings.Repeat("-", width))
	left, right := from.UTC().Format("01-02 15:04"), to.UTC().Format("01-02 15:04")
	pad := max(1, width-len(left)-len(right))
	fmt.Fprintf(&sb, "%*s  %s%s%s\n", label, "", left, strings.Repeat(" ", pad), right)
	for _, b := range a.Blocks {
		fmt.Fprintf(&sb, "  %s .. %s  free %d\n", fmtTime(b.Start), fmtTime(b.End), b.Free)
	}
	return sb.String()
}

func unitOr(u string) string {
	if u == "" {
		return "units"
	}
	return u
}

// eventRow is the fixed-width row of one event in watch and history.
const eventRow = "%-10s %-20s %-18s %-24s %-10s %-10s %-16s %-20s %s\n"

// printEventHeader prints the header of eventRow.
func printEventHeader() {
	fmt.Fprintf(cliOut, eventRow, "VERSION", "TIME", "ACTION", "ID", "TENANT", "STATE", "PARTS", "START", "END")
}

// printEvent prints one event as eventRow or a JSON line.
func printEvent(asJSON bool, e *ledgerdv1.Event) {
	if asJSON {
		printJSON(e)
		return
	}
	pos := fmt.Sprintf("%d.%d", e.Version, e.Index)
	if r := e.Reservation; r != nil {
		fmt.Fprintf(cliOut, eventRow, pos, fmtTime(e.Time), e.Action, r.Id, r.Tenant, stateName(r.State), partsWithUnits(r), fmtTime(r.Start), fmtTime(r.End))
		printMaterializationEvent(e)
	} else if res := e.Resource; res != nil {
		detail := fmt.Sprintf("capacity=%d", res.Capacity)
		if e.Type == ledgerdv1.EventType_EVENT_TYPE_POLICY_CHANGED {
			detail = policyString(res)
		}
		if e.Type == ledgerdv1.EventType_EVENT_TYPE_UNIT_WINDOW {
			detail = fmt.Sprintf("units down=%d", len(res.UnitDowns))
		}
		fmt.Fprintf(cliOut, eventRow, pos, fmtTime(e.Time), e.Action, res.Name, "-", "-", detail, "-", "-")
	} else if l := e.Limit; l != nil {
		lim, apv := limitsString(l.Limits)
		fmt.Fprintf(cliOut, eventRow, pos, fmtTime(e.Time), e.Action, l.Tenant+"/"+l.Resource, l.Tenant, "-", lim+"; approval "+apv, "-", "-")
	}
}

// runHistory is `ledgerd history [ID]`: the retained events, oldest
// first, of one reservation (the API's History reservation_id filter) or
// of everything the caller may see.
func runHistory(args []string) int {
	fs, cf := newFlagSet("history", "[ID]")
	from := fs.Uint64("from-version", 1, "first version")
	limit := fs.Int("n", 0, "at most this many events (0: all)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 1 {
		return usageErr(fs, "want at most one reservation ID, got %q", fs.Args())
	}
	if *limit < 0 {
		return usageErr(fs, "-n must be >= 0, got %d", *limit)
	}
	id := fs.Arg(0)
	return cf.withClient("history", func(ctx context.Context, c *client.Client) error {
		if !cf.json {
			printEventHeader()
		}
		v, idx, n := *from, uint32(0), 0
		for {
			resp, err := c.History(ctx, &ledgerdv1.HistoryRequest{FromVersion: v, FromIndex: idx, Limit: 1000, ReservationId: id})
			if err != nil {
				return err
			}
			for _, e := range resp.Events {
				if *limit > 0 && n == *limit {
					return nil
				}
				printEvent(cf.json, e)
				n++
			}
			if resp.NextVersion == v && resp.NextIndex == idx {
				if n == 0 && id != "" {
					// An empty table alone would not say whether the
					// ID was mistyped.
					fmt.Fprintf(cliErr, "no events recorded for %q from version %d on (an unknown ID?)\n", id, *from)
				}
				return nil // nothing newer
			}
			v, idx = resp.NextVersion, resp.NextIndex
		}
	})
}

func runWatch(args []string) int {
	fs, cf := newFlagSet("watch", "")
	from := fs.Uint64("from-version", 0, "first version (0: only new events)")
	index := fs.Uint("from-index", 0, "skip events of -from-version below this index")
	fs.DurationVar(&cf.timeout, "for", 0, "stop after this long (default: until interrupted)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	return cf.withClient("watch", func(ctx context.Context, c *client.Client) error {
		// Events arrive one at a time, so columns have fixed widths instead of
		// being aligned over the whole output.
		if !cf.json {
			printEventHeader()
		}
		err := c.Watch(ctx, client.Position{Version: *from, Index: uint32(*index)}, func(e *ledgerdv1.Event) error {
			printEvent(cf.json, e)
			return nil
		})
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil // -for elapsed or interrupted: the normal end of a watch
		}
		return err
	})
}
