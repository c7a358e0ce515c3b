package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc/client"
)

func init() {
	register("tenant", "Per-tenant limits: `tenant limits set|get` (set: operator)", runTenant)
	register("approvals", "Requests waiting for an operator: `approvals list|approve|deny`", runApprovals)
	register("usage", "Report booked, held, released-early and expired unit-hours per tenant and resource", runUsage)
}

func runTenant(args []string) int {
	if len(args) < 2 || args[0] != "limits" || (args[1] != "set" && args[1] != "get") {
		fmt.Fprintln(cliErr, "Usage: ledgerd tenant limits set TENANT -resource R [limits...] | ledgerd tenant limits get [TENANT] [-resource R]")
		return exitUsage
	}
	if args[1] == "set" {
		return tenantLimitsSet(args[2:])
	}
	return tenantLimitsGet(args[2:])
}

// limitFlags are the flags of `tenant limits set`.
type limitFlags struct {
	maxUnits, maxUnitHours, aboveUnits                 int64
	window, ahead, duration, holdTTL, aboveDur, apvTTL time.Duration
	approval                                           string
	clear                                              bool
}

func (lf *limitFlags) register(fs *flag.FlagSet) {
	fs.Int64Var(&lf.maxUnits, "max-units", 0, "most units held at any instant")
	fs.Int64Var(&lf.maxUnitHours, "max-unit-hours", 0, "most unit-hours booked in any -window of reservation time")
	fs.Var(&durFlag{&lf.window}, "window", "rolling window of -max-unit-hours (e.g. 30d)")
	fs.Var(&durFlag{&lf.ahead}, "max-ahead", "how far ahead a booking may end (book-ahead horizon)")
	fs.Var(&durFlag{&lf.duration}, "max-duration", "longest booking")
	fs.Var(&durFlag{&lf.holdTTL}, "max-hold-ttl", "longest hold TTL a request may ask for")
	fs.StringVar(&lf.approval, "approval", "", "required: every request waits for an operator")
	fs.Int64Var(&lf.aboveUnits, "approval-above-units", 0, "requests of more units wait for an operator")
	fs.Var(&durFlag{&lf.aboveDur}, "approval-above-duration", "longer requests wait for an operator")
	fs.Var(&durFlag{&lf.apvTTL}, "approval-ttl", "how long a request waits for approval (default 7d)")
	fs.BoolVar(&lf.clear, "clear", false, "remove the entry")
}

// limits returns the public limits, nil with -clear.
func (lf *limitFlags) limits() (*ledgerdv1.Limits, error) {
	if lf.clear {
		return nil, nil
	}
	l := &ledgerdv1.Limits{MaxUnits: lf.maxUnits, MaxUnitHours: lf.maxUnitHours, ApprovalAboveUnits: lf.aboveUnits}
	switch lf.approval {
	case "", "none":
	case "required":
		l.ApprovalRequired = true
	default:
		return nil, fmt.Errorf("-approval: want required or none, got %q", lf.approval)
	}
	for _, d := range []struct {
		v   time.Duration
		out **durationpb.Duration
	}{{lf.window, &l.Window}, {lf.ahead, &l.MaxAhead}, {lf.duration, &l.MaxDuration}, {lf.holdTTL, &l.MaxHoldTtl},
		{lf.aboveDur, &l.ApprovalAboveDuration}, {lf.apvTTL, &l.ApprovalTtl}} {
		if d.v != 0 {
			*d.out = durationpb.New(d.v)
		}
	}
	return l, nil
}

func tenantLimitsSet(args []string) int {
	tenant, args := splitName(args)
	fs, cf := newFlagSet("tenant limits set", "TENANT")
	resource := fs.String("resource", "*", "resource, or * for every resource without its own entry")
	var lf limitFlags
	lf.register(fs)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if tenant = nameArg(fs, tenant); tenant == "" {
		return usageErr(fs, "want a tenant (or * for every tenant without its own entry)")
	}
	l, err := lf.limits()
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	return cf.withClient("tenant limits set", func(ctx context.Context, c *client.Client) error {
		e, err := c.SetLimits(ctx, &ledgerdv1.SetLimitsRequest{Tenant: tenant, Resource: *resource, Limits: l})
		if err == nil {
			printLimits(cf.json, e)
		}
		return err
	})
}

func tenantLimitsGet(args []string) int {
	tenant, args := splitName(args)
	fs, cf := newFlagSet("tenant limits get", "[TENANT]")
	resource := fs.String("resource", "", "with TENANT: also show the entry in force on this resource")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	tenant = nameArg(fs, tenant)
	return cf.withClient("tenant limits get", func(ctx context.Context, c *client.Client) error {
		resp, err := c.GetLimits(ctx, &ledgerdv1.GetLimitsRequest{Tenant: tenant, Resource: *resource})
		if err != nil {
			return err
		}
		printLimits(cf.json, resp.Limits...)
		if resp.Effective != nil && !cf.json {
			fmt.Fprintf(cliOut, "in force for %s on %s: entry %s/%s\n", tenant, *resource, resp.Effective.Tenant, resp.Effective.Resource)
		} else if *resource != "" && tenant != "" && !cf.json {
			fmt.Fprintf(cliOut, "in force for %s on %s: none\n", tenant, *resource)
		}
		return nil
	})
}

// printLimits prints limit entries as a table or JSON lines.
func printLimits(asJSON bool, ls ...*ledgerdv1.TenantLimit) {
	if asJSON {
		for _, l := range ls {
			printJSON(l)
		}
		return
	}
	w := table()
	fmt.Fprintln(w, "TENANT\tRESOURCE\tLIMITS\tAPPROVAL\tVERSION")
	for _, e := range ls {
		lim, apv := limitsString(e.Limits)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\n", e.Tenant, e.Resource, lim, apv, e.Version)
	}
	w.Flush()
}

// limitsString describes limits and the approval rule ("-" for none,
// "cleared" for an entry without limits).
func limitsString(l *ledgerdv1.Limits) (limits, approval string) {
	if l == nil {
		return "cleared", "-"
	}
	var ls, as []string
	d := func(x *durationpb.Duration) string { return fmtDur(x.AsDuration()) }
	if l.MaxUnits > 0 {
		ls = append(ls, fmt.Sprintf("units<=%d", l.MaxUnits))
	}
	if l.MaxUnitHours > 0 {
		ls = append(ls, fmt.Sprintf("unit-hours<=%d/%s", l.MaxUnitHours, d(l.Window)))
	}
	if l.MaxAhead != nil {
		ls = append(ls, "ahead<="+d(l.MaxAhead))
	}
	if l.MaxDuration != nil {
		ls = append(ls, "duration<="+d(l.MaxDuration))
	}
	if l.MaxHoldTtl != nil {
		ls = append(ls, "hold-ttl<="+d(l.MaxHoldTtl))
	}
	if l.ApprovalRequired {
		as = append(as, "required")
	}
	if l.ApprovalAboveUnits > 0 {
		as = append(as, fmt.Sprintf("units>%d", l.ApprovalAboveUnits))
	}
	if l.ApprovalAboveDuration != nil {
		as = append(as, "duration>"+d(l.ApprovalAboveDuration))
	}
	if len(as) > 0 {
		ttl := "7d"
		if l.ApprovalTtl != nil {
			ttl = d(l.ApprovalTtl)
		}
		as = append(as, "waits "+ttl)
	}
	limits, approval = strings.Join(ls, " "), strings.Join(as, " ")
	if limits == "" {
		limits = "-"
	}
	if approval == "" {
		approval = "-"
	}
	return limits, approval
}

// fmtDur prints whole days as "30d", else Go's form ("1h30m0s").
func fmtDur(d time.Duration) string {
	if day := 24 * time.Hour; d > 0 && d%day == 0 {
		return fmt.Sprintf("%dd", d/day)
	}
	return d.String()
}

func runApprovals(args []string) int {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "list":
		return approvalsList(args)
	case "approve", "deny":
		return approvalsDecide(sub, args)
	}
	fmt.Fprintf(cliErr, "ledgerd approvals: unknown subcommand %q (list, approve, deny)\n", sub)
	return exitUsage
}

func approvalsList(args []string) int {
	fs, cf := newFlagSet("approvals list", "")
	tenant := fs.String("tenant", "", "only this tenant's (operators)")
	resource := fs.String("resource", "", "only requests on this resource")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageErr(fs, "unexpected arguments %q", fs.Args())
	}
	req := &ledgerdv1.ListRequest{Tenant: *tenant, Resource: *resource,
		States: []ledgerdv1.ReservationState{ledgerdv1.ReservationState_RESERVATION_STATE_PENDING_APPROVAL}}
	return cf.withClient("approvals list", func(ctx context.Context, c *client.Client) error {
		rs, err := c.ListAll(ctx, req)
		if err != nil {
			return err
		}
		if cf.json {
			printReservations(true, rs...)
			return nil
		}
		w := table()
		fmt.Fprintln(w, "ID\tTENANT\tPARTS\tSTART\tEND\tWAITS UNTIL\tWHY")
		for _, r := range rs {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Id, r.Tenant, partsString(r.Parts), fmtTime(r.Start), fmtTime(r.End), fmtTime(r.HoldExpiresAt), cell(r.ApprovalReason))
		}
		return w.Flush()
	})
}

func approvalsDecide(sub string, args []string) int {
	id, args := splitName(args)
	fs, cf := newFlagSet("approvals "+sub, "ID")
	reason := fs.String("reason", "", "why (required to deny; a note when approving)")
	key := fs.String("key", "", "idempotency key (default: random, reused on retries)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if id = nameArg(fs, id); id == "" {
		return usageErr(fs, "want a reservation ID")
	}
	if sub == "deny" && *reason == "" {
		return usageErr(fs, "-reason is required: the requester sees it")
	}
	return cf.withClient("approvals "+sub, func(ctx context.Context, c *client.Client) error {
		var r *ledgerdv1.Reservation
		var err error
		if sub == "approve" {
			r, err = c.Approve(ctx, &ledgerdv1.ApproveRequest{Id: id, Note: *reason, IdempotencyKey: *key})
		} else {
			r, err = c.Deny(ctx, &ledgerdv1.DenyRequest{Id: id, Reason: *reason, IdempotencyKey: *key})
		}
		if err == nil {
			printReservations(cf.json, r)
		}
		return err
	})
}

func runUsage(args []string) int {
	fs, cf := newFlagSet("usage", "")
	tenant := fs.String("tenant", "", "only this tenant (operators; others see their own)")
	resource := fs.String("resource", "", "only this resource")
	var from, to time.Time
	fs.Var(&timeFlag{&from}, "from", "start of the period of reservation time")
	fs.Var(&timeFlag{&to}, "to", "end of the period (exclusive)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageErr(fs, "unexpected arguments %q", fs.Args())
	}
	req := &ledgerdv1.UsageRequest{Tenant: *tenant, Resource: *resource}
	if !from.IsZero() {
		req.From = timestamppb.New(from)
	}
	if !to.IsZero() {
		req.To = timestamppb.New(to)
	}
	return cf.withClient("usage", func(ctx context.Context, c *client.Client) error {
		rows, err := c.Usage(ctx, req)
		if err != nil {
			return err
		}
		if cf.json {
			for _, r := range rows {
				printJSON(r)
			}
			return nil
		}
		w := table()
		fmt.Fprintln(w, "TENANT\tRESOURCE\tBOOKED\tHELD\tRELEASED EARLY\tEXPIRED\tCANCELLED\tRESERVATIONS")
		saturated := false
		for _, r := range rows {
			h := func(s int64) string { return usageHours(s, r.Saturated) }
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", r.Tenant, r.Resource, h(r.BookedUnitSeconds), h(r.HeldUnitSeconds),
				h(r.ReleasedEarlyUnitSeconds), h(r.ExpiredUnitSeconds), h(r.CancelledUnitSeconds), r.Reservations)
			saturated = saturated || r.Saturated
		}
		if err := w.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(cliOut, "(unit-hours of reservation time; -json gives unit-seconds)")
		if saturated {
			fmt.Fprintln(cliOut, "(+: the sum passed the largest figure the report holds and stopped there; the true one is larger)")
		}
		return nil
	})
}

// hours prints unit-seconds as unit-hours with two decimals.
func hours(s int64) string { return fmt.Sprintf("%d.%02d", s/3600, s%3600*100/3600) }

// usageHours is hours for a figure of a usage row, marked with "+" when
// the row is saturated and the figure is the one a saturated sum gives
// (the int64 maximum of unit-milliseconds, in unit-seconds).
func usageHours(s int64, saturated bool) string {
	if saturated && s == math.MaxInt64/1000 {
		return hours(s) + "+"
	}
	return hours(s)
}

// approvalNotes says why a reservation waited for approval and what the
// operator answered.
func approvalNotes(r *ledgerdv1.Reservation) []string {
	var out []string
	if r.ApprovalReason != "" {
		out = append(out, "approval: "+cell(r.ApprovalReason))
	}
	if r.DecisionReason != "" {
		out = append(out, "decision: "+cell(r.DecisionReason))
	}
	return out
}
