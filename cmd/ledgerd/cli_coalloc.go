package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ledgerd/ledgerd/rpc/client"
)

func init() {
	register("coalloc", "Book one interval at the same start on several sites (hold, then commit or abort)", runCoalloc)
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

// String implements flag.Value.
func (m *multiFlag) String() string { return strings.Join(*m, " ") }

// Set implements flag.Value.
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

func runCoalloc(args []string) int {
	fs, cf := newFlagSet("coalloc", "")
	var sites, res multiFlag
	fs.Var(&sites, "site", "NAME=ADDR[,ADDR...]: a site and its agents (repeat per site)")
	fs.Var(&res, "res", "SITE:resource=amount[,resource=amount]: what to book at a site (repeat per site)")
	var dur, ttl time.Duration
	var after, before time.Time
	fs.Var(&durFlag{&dur}, "dur", "duration (required)")
	fs.Var(&durFlag{&ttl}, "ttl", "TTL of the phase-one holds (default 30s)")
	fs.Var(&timeFlag{&after}, "after", "earliest common start (default now)")
	fs.Var(&timeFlag{&before}, "before", "latest end (default none)")
	key := fs.String("key", "", "base idempotency key (default: random)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if len(sites) == 0 || len(res) == 0 || dur <= 0 {
		return usageErr(fs, "-site, -res and -dur are required")
	}
	tc, err := cf.tlsConfig()
	if err != nil {
		return fail("coalloc", err)
	}
	clients := map[string]*client.Client{}
	for _, s := range sites {
		name, addrs, ok := strings.Cut(s, "=")
		if !ok || name == "" || addrs == "" {
			return usageErr(fs, "-site: want NAME=ADDR[,ADDR...], got %q", s)
		}
		if clients[name] != nil {
			return usageErr(fs, "-site: %q given twice", name)
		}
		c, err := client.New(strings.Split(addrs, ","), client.Options{Token: cf.token, TLS: tc})
		if err != nil {
			return fail("coalloc", err)
		}
		clients[name] = c
	}
	req := client.CoRequest{Duration: dur, NotBefore: after, Deadline: before, HoldTTL: ttl, Key: *key}
	seen := map[string]bool{}
	for _, r := range res {
		site, spec, ok := strings.Cut(r, ":")
		if !ok || clients[site] == nil {
			return usageErr(fs, "-res: want SITE:resource=amount with a SITE named by -site, got %q", r)
		}
		if seen[site] {
			return usageErr(fs, "-res: site %q given twice; list its parts with commas", site)
		}
		seen[site] = true
		parts, err := parseParts(spec)
		if err != nil {
			return usageErr(fs, "%v", err)
		}
		req.Sites = append(req.Sites, client.SiteRequest{Site: site, Client: clients[site], Parts: parts})
	}
	ctx, cancel := cf.context()
	defer cancel()
	out, err := client.CoAllocate(ctx, req)
	if err != nil {
		var ce *client.CoAllocError
		if errors.As(err, &ce) && len(ce.Stranded) > 0 {
			fmt.Fprintf(cliErr, "ledgerd coalloc: %v\n", err)
			return exitError
		}
		return fail("coalloc", err)
	}
	names := make([]string, 0, len(out.Reservations))
	for n := range out.Reservations {
		names = append(names, n)
	}
	sort.Strings(names)
	if cf.json {
		for _, n := range names {
			printJSON(out.Reservations[n])
		}
		return exitOK
	}
	fmt.Fprintf(cliOut, "co-allocated %s .. %s on %d sites\n", out.Start.UTC().Format(time.RFC3339), out.End.UTC().Format(time.RFC3339), len(names))
	w := table()
	fmt.Fprintln(w, "SITE\tID\tSTATE\tPARTS")
	for _, n := range names {
		r := out.Reservations[n]
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", n, r.Id, stateName(r.State), partsString(r.Parts))
	}
	w.Flush()
	return exitOK
}
