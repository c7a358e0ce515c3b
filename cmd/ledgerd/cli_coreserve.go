package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc/client"
)

func init() {
	register("coreserve", "Book several sub-requests, each on one of the candidate resources, all or nothing", runCoReserve)
}

// coReserveHelp explains the placement rule, after the flags.
const coReserveHelp = `
Each -sub is placed in order on the first candidate where it fits without
overlap; only when none exists does it go, by overlap, to the relaxed
candidate with the highest probability of no violation that reaches that
resource's v*. The request is booked only if every sub-request is placed
and the joint probability (the product) reaches -min-joint; otherwise
nothing is booked (exit 3). Sub-request i is the reservation ID/i: follow
it with "ledgerd get ID/i", end it with "ledgerd cancel ID/i".
`

func runCoReserve(args []string) int {
	fs, cf := newFlagSet("coreserve", "")
	var subs multiFlag
	fs.Var(&subs, "sub", "AMOUNT@START+DURATION, e.g. 4@+1h+2h or 8@2030-01-02T15:00:00Z+90m (repeatable, in order)")
	candidates := fs.String("candidates", "", "candidate resources in order of preference, comma-separated (required)")
	minJoint := fs.String("min-joint", "0", "least joint probability of no violation in [0, 1], at most 3 decimals")
	id := fs.String("id", "", "request ID; sub-request i is ID/i (default: assigned by the ledger)")
	labels := kvFlag{}
	fs.Var(labels, "label", "label key=value for every sub-reservation (repeatable)")
	key := fs.String("key", "", "idempotency key (default: a random one, reused on retries)")
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprint(fs.Output(), coReserveHelp)
	}
	if code, ok := parse(fs, args); !ok {
		return code
	}
	req := &ledgerdv1.CoReserveRequest{Id: *id, Labels: labels, IdempotencyKey: *key}
	switch {
	case fs.NArg() != 0:
		return usageErr(fs, "unexpected arguments %q", fs.Args())
	case len(subs) == 0:
		return usageErr(fs, "at least one -sub is required")
	case *candidates == "":
		return usageErr(fs, "-candidates is required")
	}
	for _, s := range subs {
		sub, err := parseCoSub(s)
		if err != nil {
			return usageErr(fs, "-sub %s", err)
		}
		req.Subs = append(req.Subs, sub)
	}
	req.Candidates = strings.Split(*candidates, ",")
	if strings.TrimSpace(*minJoint) != "0" {
		p, err := parsePermille(*minJoint)
		if err != nil {
			return usageErr(fs, "-min-joint: %v", err)
		}
		req.MinJointPermille = p
	}
	return cf.withClient("coreserve", func(ctx context.Context, c *client.Client) error {
		out, err := c.CoReserve(ctx, req)
		if err == nil {
			printCoAdmission(cf.json, req, out)
		}
		return err
	})
}

// printCoAdmission prints the placements and the joint probability as a
// table, or the response as one JSON line.
func printCoAdmission(asJSON bool, req *ledgerdv1.CoReserveRequest, out *ledgerdv1.CoReserveResponse) {
	if asJSON {
		printJSON(out)
		return
	}
	w := table()
	fmt.Fprintln(w, "SUB\tID\tRESOURCE\tAMOUNT\tSTART\tEND\tPROBABILITY\tADMITTED")
	for i, p := range out.Placements {
		r := p.Reservation
		how := "fits"
		if r.GetRelaxed() {
			how = "by overlap"
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", i, r.GetId(), p.Resource, req.Subs[i].Amount,
			fmtTime(r.GetStart()), fmtTime(r.GetEnd()), permilleString(p.ProbabilityPermille), how)
	}
	_ = w.Flush()
	fmt.Fprintf(cliOut, "joint probability %s\n", permilleString(out.JointPermille))
}

// parseCoSub reads AMOUNT@START+DURATION. START is anything -at takes
// (RFC 3339, now, +2h); the duration follows the last '+'.
func parseCoSub(s string) (*ledgerdv1.CoSubRequest, error) {
	amount, rest, ok := strings.Cut(s, "@")
	plus := strings.LastIndex(rest, "+")
	if !ok || plus <= 0 {
		return nil, fmt.Errorf("%q: want AMOUNT@START+DURATION, e.g. 4@+1h+2h", s)
	}
	n, err := strconv.ParseInt(amount, 10, 64)
	if err != nil || n <= 0 {
		return nil, fmt.Errorf("%q: amount must be a number > 0", s)
	}
	start, err := parseTime(rest[:plus])
	if err != nil {
		return nil, fmt.Errorf("%q: %w", s, err)
	}
	d, err := parseDuration(rest[plus+1:])
	if err != nil || d <= 0 {
		return nil, fmt.Errorf("%q: duration must be > 0", s)
	}
	return &ledgerdv1.CoSubRequest{Amount: n, Start: timestamppb.New(start), Duration: durationpb.New(d)}, nil
}
