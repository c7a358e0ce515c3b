package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/internal/atomicfile"
	"github.com/ledgerd/ledgerd/rpc/client"
)

func init() {
	register("resources", "List, create, update or delete resources, or set their admission policy (operator)", runResources)
	register("members", "List the cluster's servers with role and health (operator)", runMembers)
	register("snapshot", "Save or restore a snapshot of the ledger (operator)", runSnapshot)
}

func runResources(args []string) int {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "list":
		return resourcesList(args)
	case "create":
		return resourcesCreate(args)
	case "update":
		return resourcesUpdate(args)
	case "delete":
		return resourcesDelete(args)
	case "policy":
		return resourcesPolicy(args)
	case "import":
		return resourcesImport(args)
	case "unit-down":
		return resourcesUnitDown(args)
	case "unit-up":
		return resourcesUnitUp(args)
	case "units":
		return resourcesUnits(args)
	}
	fmt.Fprintf(cliErr, "ledgerd resources: unknown subcommand %q (list, create, update, delete, policy, unit-down, unit-up, units, import)\n", sub)
	return exitUsage
}

// splitName takes a leading positional NAME so flags may follow it.
func splitName(args []string) (string, []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "", args
}

// nameArg returns the name splitName found before the flags, or else the
// only positional argument left after them (empty when there is none).
func nameArg(fs *flag.FlagSet, name string) string {
	if name == "" && fs.NArg() == 1 {
		return fs.Arg(0)
	}
	return name
}

func printResources(asJSON bool, rs ...*ledgerdv1.Resource) {
	if asJSON {
		for _, r := range rs {
			printJSON(r)
		}
		return
	}
	w := table()
	// Capacity windows (maintenance) get a column when there are any.
	windows := false
	for _, r := range rs {
		windows = windows || len(r.Windows) > 0
	}
	units := anyUnits(rs)
	header := "NAME\tCAPACITY\tUNIT\tPOLICY\tLABELS"
	if windows {
		header += "\tWINDOWS"
	}
	if units {
		header += "\tUNITS"
	}
	fmt.Fprintln(w, header)
	for _, r := range rs {
		keys := make([]string, 0, len(r.Labels))
		for k := range r.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var ls []string
		for _, k := range keys {
			ls = append(ls, cell(k)+"="+cell(r.Labels[k]))
		}
		line := fmt.Sprintf("%s\t%d\t%s\t%s\t%s", r.Name, r.Capacity, cell(r.Unit), policyString(r), strings.Join(ls, ","))
		if windows {
			ws := []string{}
			for _, win := range r.Windows {
				ws = append(ws, fmt.Sprintf("%d from %s to %s", win.Capacity, fmtTime(win.Start), fmtTime(win.End)))
			}
			if len(ws) == 0 {
				ws = append(ws, "-")
			}
			line += "\t" + strings.Join(ws, "; ")
		}
		if units {
			line += "\t" + resourceUnits(r)
		}
		fmt.Fprintln(w, line)
	}
	w.Flush()
}

func resourcesList(args []string) int {
	fs, cf := newFlagSet("resources list", "")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	return cf.withClient("resources", func(ctx context.Context, c *client.Client) error {
		rs, err := c.Resources(ctx)
		if err == nil {
			printResources(cf.json, rs...)
		}
		return err
	})
}

func resourcesCreate(args []string) int {
	name, args := splitName(args)
	fs, cf := newFlagSet("resources create", "NAME")
	capacity := fs.Int64("capacity", 0, "capacity in units (required, > 0)")
	unit := fs.String("unit", "", "unit label, e.g. cores")
	labels := kvFlag{}
	fs.Var(labels, "label", "label key=value (repeatable)")
	var pf policyFlags
	pf.register(fs, "reject")
	var uf unitFlags
	uf.register(fs)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if name = nameArg(fs, name); name == "" {
		return usageErr(fs, "want a resource name")
	}
	if *capacity <= 0 && (uf.nodes == "" || *capacity < 0) {
		return usageErr(fs, "-capacity must be > 0")
	}
	unitPolicy, err := uf.spec()
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	p, vstar, maxPushes, err := pf.spec()
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	return cf.withClient("resources create", func(ctx context.Context, c *client.Client) error {
		r, err := uf.create(ctx, c, &ledgerdv1.Resource{Name: name, Capacity: *capacity, Unit: *unit, Labels: labels, Policy: p, MinSuccessPermille: vstar, MaxPushes: maxPushes, UnitPolicy: unitPolicy})
		if err == nil {
			printResources(cf.json, r)
		}
		return err
	})
}

func resourcesUpdate(args []string) int {
	name, args := splitName(args)
	fs, cf := newFlagSet("resources update", "NAME")
	capacity := fs.Int64("capacity", -1, "new capacity (required, >= 0)")
	var from, to time.Time
	fs.Var(&timeFlag{&from}, "from", "start of the window (default: for good, from now)")
	fs.Var(&timeFlag{&to}, "to", "end of the window (default: open-ended)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if name = nameArg(fs, name); name == "" {
		return usageErr(fs, "want a resource name")
	}
	if *capacity < 0 {
		return usageErr(fs, "-capacity is required and must be >= 0")
	}
	req := &ledgerdv1.UpdateCapacityRequest{Name: name, Capacity: *capacity}
	if !from.IsZero() {
		req.From = timestamppb.New(from)
	}
	if !to.IsZero() {
		req.To = timestamppb.New(to)
	}
	return cf.withClient("resources update", func(ctx context.Context, c *client.Client) error {
		r, err := c.UpdateCapacity(ctx, req)
		if err == nil {
			printResources(cf.json, r)
		}
		return err
	})
}

func resourcesDelete(args []string) int {
	name, args := splitName(args)
	fs, cf := newFlagSet("resources delete", "NAME")
	force := fs.Bool("force", false, "delete even with future bookings (they are cancelled)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if name = nameArg(fs, name); name == "" {
		return usageErr(fs, "want a resource name")
	}
	return cf.withClient("resources delete", func(ctx context.Context, c *client.Client) error {
		err := c.DeleteResource(ctx, name, *force)
		if err == nil && !cf.json {
			fmt.Fprintf(cliOut, "deleted %s\n", name)
		}
		return err
	})
}

func runMembers(args []string) int {
	fs, cf := newFlagSet("members", "")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	return cf.withClient("members", func(ctx context.Context, c *client.Client) error {
		ms, err := c.Members(ctx)
		if err != nil {
			return err
		}
		if cf.json {
			printJSON(&ledgerdv1.MembersResponse{Members: ms})
			return nil
		}
		w := table()
		fmt.Fprintln(w, "ID\tROLE\tHEALTHY\tSTATUS\tRAFT\tAPI")
		var insecure []string
		for _, m := range ms {
			status := m.Status
			if m.Insecure {
				status += ",INSECURE"
				insecure = append(insecure, m.Id)
			}
			fmt.Fprintf(w, "%s\t%s\t%t\t%s\t%s\t%s\n", m.Id, strings.ToLower(strings.TrimPrefix(m.Role.String(), "ROLE_")), m.Healthy, status, m.RaftAddress, m.ApiAddress)
		}
		w.Flush()
		if len(insecure) > 0 {
			fmt.Fprintf(cliErr, "WARNING: %s run(s) with -insecure: peers and callers are not all authenticated\n", strings.Join(insecure, ", "))
		}
		return nil
	})
}

func runSnapshot(args []string) int {
	if len(args) == 0 || (args[0] != "save" && args[0] != "restore") {
		fmt.Fprintln(cliErr, "Usage: ledgerd snapshot save|restore [flags] FILE")
		return exitUsage
	}
	sub := args[0]
	fs, cf := newFlagSet("snapshot "+sub, "FILE")
	file, rest := splitName(args[1:])
	if code, ok := parse(fs, rest); !ok {
		return code
	}
	if file == "" && fs.NArg() == 1 {
		file = fs.Arg(0)
	}
	if file == "" {
		return usageErr(fs, "want a file name")
	}
	c, err := cf.client()
	if err != nil {
		return fail("snapshot", err)
	}
	ctx, cancel := cf.context()
	defer cancel()
	if sub == "save" {
		var v uint64
		err := atomicfile.Write(file, func(w io.Writer) error {
			var err error
			v, err = c.SaveSnapshot(ctx, w)
			return err
		})
		if err != nil {
			return fail("snapshot save", err)
		}
		fmt.Fprintf(cliOut, "saved snapshot at version %d to %s\n", v, file)
		return exitOK
	}
	f, err := os.Open(file)
	if err != nil {
		return fail("snapshot restore", err)
	}
	defer f.Close()
	v, err := c.RestoreSnapshot(ctx, bufio.NewReader(f))
	if err != nil {
		return fail("snapshot restore", err)
	}
	fmt.Fprintf(cliOut, "restored snapshot; ledger at version %d\n", v)
	return exitOK
}
