package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// Standing reservations: `ledgerd reserve ... -repeat RRULE -tz ZONE`
// creates one; `ledgerd series get|cancel|modify` manage it. Each
// occurrence is an ordinary reservation "<series>@<local start>" that
// get, list -series, cancel, modify and watch handle like any other.

func init() {
	register("series", "Show, cancel or modify a standing reservation (get, cancel, modify)", runSeries)
}

// seriesFlags are reserve's flags for a standing reservation.
type seriesFlags struct {
	repeat, tz, id string
	horizon        time.Duration
	skip           bool
}

func (sf *seriesFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&sf.repeat, "repeat", "", "book a standing reservation: an RFC 5545 RRULE, e.g. 'FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9;COUNT=20' (-at is then its DTSTART, default local midnight today)")
	fs.StringVar(&sf.tz, "tz", "", "with -repeat: IANA time zone of the rule's wall-clock times, e.g. Europe/Berlin (default UTC)")
	fs.StringVar(&sf.id, "id", "", "with -repeat: series ID; occurrence IDs are ID@YYYYMMDDTHHMMSS (default: a random one)")
	fs.Var(&durFlag{&sf.horizon}, "horizon", "with -repeat and no COUNT or UNTIL: how far ahead to book (default: the server's)")
	fs.BoolVar(&sf.skip, "skip-conflicts", false, "with -repeat: book what fits and list the rest (default: all or nothing)")
}

// used reports whether any series flag was given.
func (sf *seriesFlags) used(fs *flag.FlagSet) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "repeat", "tz", "id", "horizon", "skip-conflicts":
			set = true
		}
	})
	return set
}

// reserveSeries runs `reserve -repeat`.
func reserveSeries(fs *flag.FlagSet, cf *clientFlags, shape *shapeFlags, sf *seriesFlags, labels map[string]string, key string) int {
	if sf.repeat == "" {
		return usageErr(fs, "-tz, -id, -horizon and -skip-conflicts need -repeat")
	}
	if !shape.after.IsZero() || !shape.before.IsZero() {
		return usageErr(fs, "-repeat takes -at (its first day and time), not -after or -before")
	}
	parts, err := parseParts(shape.res)
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	if shape.dur <= 0 {
		return usageErr(fs, "-dur is required and must be > 0 (e.g. -dur 90m)")
	}
	req := &ledgerdv1.ReserveSeriesRequest{Id: sf.id, Parts: parts, Duration: durationpb.New(shape.dur), Repeat: sf.repeat, Tz: sf.tz,
		Labels: labels, IdempotencyKey: key, Conflicts: ledgerdv1.SeriesConflictMode_SERIES_CONFLICT_MODE_ALL_OR_NOTHING}
	if req.Id == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		req.Id = "series-" + hex.EncodeToString(b[:])
	}
	if !shape.at.IsZero() {
		req.Start = timestamppb.New(shape.at)
	}
	if sf.horizon > 0 {
		req.Horizon = durationpb.New(sf.horizon)
	}
	if sf.skip {
		req.Conflicts = ledgerdv1.SeriesConflictMode_SERIES_CONFLICT_MODE_SKIP_CONFLICTS
	}
	return cf.withClient("reserve", func(ctx context.Context, c *client.Client) error {
		out, err := c.ReserveSeries(ctx, req)
		if err != nil {
			if !cf.json {
				printSkipped(skippedOf(err))
			}
			return err
		}
		if cf.json {
			printJSON(out)
			return nil
		}
		printSeries(out.Series)
		printReservations(false, out.Booked...)
		printSkipped(out.Skipped)
		return nil
	})
}

// printSeries prints a series as a few lines.
func printSeries(s *ledgerdv1.Series) {
	w := table()
	state := "live"
	if s.Cancelled {
		state = "cancelled"
	}
	fmt.Fprintf(w, "series\t%s (%s, tenant %s)\n", s.Id, state, s.Tenant)
	fmt.Fprintf(w, "rule\tDTSTART;TZID=%s:%s RRULE:%s\n", s.Tz, s.StartLocal, s.Repeat)
	fmt.Fprintf(w, "each\t%s of %s\n", s.Duration.AsDuration(), partsString(s.Parts))
	if s.Horizon != nil {
		fmt.Fprintf(w, "horizon\t%s (booked ahead as time passes)\n", s.Horizon.AsDuration())
	}
	if s.End != nil {
		fmt.Fprintf(w, "ends\tbefore %s\n", fmtTime(s.End))
	}
	through := s.DecidedThrough
	if through == "" {
		through = "-"
	}
	fmt.Fprintf(w, "booked\t%d, could not book %d, decided through %s\n", s.Booked, s.Skipped, through)
	_ = w.Flush()
}

// skippedOf returns the occurrences an all-or-nothing refusal lists.
func skippedOf(err error) []*ledgerdv1.SkippedOccurrence {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return nil
	}
	var out []*ledgerdv1.SkippedOccurrence
	for _, d := range ce.Details() {
		if m, derr := d.Value(); derr == nil {
			if s, ok := m.(*ledgerdv1.SkippedOccurrence); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// printSkipped lists the occurrences that could not be booked.
func printSkipped(ss []*ledgerdv1.SkippedOccurrence) {
	if len(ss) == 0 {
		return
	}
	w := table()
	fmt.Fprintln(w, "NOT BOOKED\tSTART\tREASON\tEARLIEST ALTERNATIVE\tWHY")
	for _, s := range ss {
		alt := "-"
		if s.EarliestAlternative != nil {
			alt = fmtTime(s.EarliestAlternative)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", s.Id, fmtTime(s.Start), s.Reason, alt, s.Message)
	}
	_ = w.Flush()
}

// runSeries dispatches `ledgerd series get|cancel|modify`.
func runSeries(args []string) int {
	sub := ""
	if len(args) > 0 {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "get":
		return runSeriesGet(args)
	case "cancel":
		return runSeriesCancel(args)
	case "modify":
		return runSeriesModify(args)
	}
	fs, _ := newFlagSet("series", "get|cancel|modify ID [flags]")
	return usageErr(fs, "want get, cancel or modify, got %q", sub)
}

func runSeriesGet(args []string) int {
	fs, cf := newFlagSet("series get", "ID")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usageErr(fs, "want exactly one series ID")
	}
	return cf.withClient("series get", func(ctx context.Context, c *client.Client) error {
		s, err := c.GetSeries(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		if cf.json {
			printJSON(s)
		} else {
			printSeries(s)
		}
		return nil
	})
}

func runSeriesCancel(args []string) int {
	fs, cf := newFlagSet("series cancel", "ID")
	var from time.Time
	fs.Var(&timeFlag{&from}, "from", "cancel the occurrences starting at or after this time: RFC 3339, now, +duration (default: now)")
	key := fs.String("key", "", "idempotency key (default: a random one)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usageErr(fs, "want exactly one series ID")
	}
	req := &ledgerdv1.CancelSeriesRequest{Id: fs.Arg(0), IdempotencyKey: *key}
	if !from.IsZero() {
		req.From = timestamppb.New(from)
	}
	return cf.withClient("series cancel", func(ctx context.Context, c *client.Client) error {
		out, err := c.CancelSeries(ctx, req)
		if err != nil {
			return err
		}
		if cf.json {
			printJSON(out)
			return nil
		}
		printSeries(out.Series)
		fmt.Fprintf(cliOut, "cancelled %d occurrences\n", len(out.CancelledIds))
		for _, id := range out.CancelledIds {
			fmt.Fprintln(cliOut, id)
		}
		return nil
	})
}

func runSeriesModify(args []string) int {
	fs, cf := newFlagSet("series modify", "ID")
	var from time.Time
	fs.Var(&timeFlag{&from}, "from", "first time the change applies to: RFC 3339, now, +duration (required)")
	newID := fs.String("new-id", "", "ID of the series that continues it (required)")
	var dur time.Duration
	fs.Var(&durFlag{&dur}, "dur", "new length of each occurrence")
	res := fs.String("res", "", "new resources and amounts, e.g. gpu=4")
	key := fs.String("key", "", "idempotency key (default: a random one)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	switch {
	case fs.NArg() != 1:
		return usageErr(fs, "want exactly one series ID")
	case from.IsZero():
		return usageErr(fs, "-from is required")
	case *newID == "":
		return usageErr(fs, "-new-id is required")
	case dur == 0 && *res == "":
		return usageErr(fs, "nothing to change: give -dur or -res")
	}
	req := &ledgerdv1.ModifySeriesRequest{Id: fs.Arg(0), From: timestamppb.New(from), NewId: *newID, IdempotencyKey: *key}
	if dur != 0 {
		req.Duration = durationpb.New(dur)
	}
	if *res != "" {
		parts, err := parseParts(*res)
		if err != nil {
			return usageErr(fs, "%v", err)
		}
		req.Parts = parts
	}
	return cf.withClient("series modify", func(ctx context.Context, c *client.Client) error {
		out, err := c.ModifySeries(ctx, req)
		if err != nil {
			return err
		}
		if cf.json {
			printJSON(out)
			return nil
		}
		printSeries(out.Old)
		fmt.Fprintf(cliOut, "cancelled %d occurrences\n", len(out.CancelledIds))
		printSeries(out.Series)
		printReservations(false, out.Booked...)
		printSkipped(out.Skipped)
		return nil
	})
}
