package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/ledgerd/ledgerd/bridge/slurm"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// resourcesImport is `ledgerd resources import slurm -partition NAME`: it
// reads the partition's nodes with sinfo (on this machine, which must be
// a Slurm client) and creates a resource with units named after them.
// The agent's slurm_bridge role then keeps it in sync: unusable nodes
// and MAINT reservations become unit windows (docs/operations.md).
func resourcesImport(args []string) int {
	kind, args := splitName(args)
	fs, cf := newFlagSet("resources import", "slurm")
	partition := fs.String("partition", "", "the Slurm partition to import (required)")
	name := fs.String("name", "", "the resource's name (default: the partition's)")
	slurmConf := fs.String("slurm-conf", "", "slurm.conf, when not the default; env SLURM_CONF works too")
	sinfo := fs.String("sinfo", "", "sinfo's path (default: from $PATH)")
	unitPolicy := fs.String("unit-policy", "", "remap (default) or refuse; see resources create")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if kind = nameArg(fs, kind); kind != "slurm" {
		return usageErr(fs, "want the resource manager to import from: slurm")
	}
	if *partition == "" {
		return usageErr(fs, "-partition is required")
	}
	if *name == "" {
		*name = *partition
	}
	uf := unitFlags{nodes: "x", policy: *unitPolicy}
	pol, err := uf.spec()
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	var env []string
	if *slurmConf != "" {
		env = append(env, "SLURM_CONF="+*slurmConf)
	}
	d, err := slurm.New(slurm.Config{Prefix: "ledgerd-", Env: env, Sinfo: *sinfo})
	if err != nil {
		return fail("resources import", err)
	}
	return cf.withClient("resources import", func(ctx context.Context, c *client.Client) error {
		nodes, err := d.Nodes(ctx, *partition)
		if err != nil {
			return fmt.Errorf("read partition %s: %w", *partition, err)
		}
		if len(nodes) == 0 {
			return fmt.Errorf("partition %s has no nodes", *partition)
		}
		units := make([]string, len(nodes))
		var unusable []string
		for i, n := range nodes {
			units[i] = n.Name
			if !n.Usable() {
				unusable = append(unusable, n.Name)
			}
		}
		r, err := c.CreateResource(ctx, &ledgerdv1.Resource{Name: *name, Unit: "nodes", Units: units, UnitPolicy: pol,
			Labels: map[string]string{"slurm-partition": *partition}})
		if err != nil {
			return err
		}
		printResources(cf.json, r)
		if len(unusable) > 0 && !cf.json {
			fmt.Fprintf(cliErr, "note: %s not usable in Slurm now; the slurm_bridge role (slurm_bridge.partition=%s) takes them out of service in the ledger\n",
				strings.Join(unusable, ","), *partition)
		}
		return nil
	})
}
