package main

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc/client"
)

func init() {
	register("job", "Submit a variable job: no fixed start, planned at its earliest slot (`job submit`)", runJob)
}

// jobHelp explains what a variable job is, after the flags.
const jobHelp = `
A variable job has no fixed start: the ledger plans it at its earliest slot
at or after -not-before and re-plans it until it starts, earlier when
capacity frees up and later when a reservation on a move-variable resource
needs its slot. It prints as kind "job", state COMMITTED while planned,
ACTIVE once started. Follow it with "ledgerd get ID" or "ledgerd watch";
end it with "ledgerd cancel ID" or "ledgerd complete ID".
`

func runJob(args []string) int {
	if len(args) == 0 || args[0] != "submit" {
		fmt.Fprintln(cliErr, "Usage: ledgerd job submit -resource NAME -amount N -duration D [-not-before T] [-id ID]")
		return exitUsage
	}
	fs, cf := newFlagSet("job submit", "")
	resource := fs.String("resource", "", "the resource the job runs on (required)")
	amount := fs.Int64("amount", 0, "units of capacity (required, > 0)")
	var dur time.Duration
	fs.Var(&durFlag{&dur}, "duration", "run time, e.g. 90m, 2h, 1d (required)")
	fs.Var(&durFlag{&dur}, "dur", "same as -duration")
	var notBefore time.Time
	fs.Var(&timeFlag{&notBefore}, "not-before", "earliest start (RFC 3339, now, +2h); default now")
	id := fs.String("id", "", "job ID (default: assigned by the ledger)")
	labels := kvFlag{}
	fs.Var(labels, "label", "label key=value (repeatable)")
	key := fs.String("key", "", "idempotency key (default: a random one, reused on retries)")
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprint(fs.Output(), jobHelp)
	}
	if code, ok := parse(fs, args[1:]); !ok {
		return code
	}
	switch {
	case fs.NArg() != 0:
		return usageErr(fs, "unexpected arguments %q", fs.Args())
	case *resource == "":
		return usageErr(fs, "-resource is required")
	case *amount <= 0:
		return usageErr(fs, "-amount is required and must be > 0")
	case dur <= 0:
		return usageErr(fs, "-duration is required and must be > 0")
	}
	req := &ledgerdv1.SubmitJobRequest{Id: *id, Resource: *resource, Amount: *amount, Duration: durationpb.New(dur), Labels: labels, IdempotencyKey: *key}
	if !notBefore.IsZero() {
		req.NotBefore = timestamppb.New(notBefore)
	}
	return cf.withClient("job submit", func(ctx context.Context, c *client.Client) error {
		r, err := c.SubmitJob(ctx, req)
		if err == nil {
			printReservations(cf.json, r)
		}
		return err
	})
}
