// Command replicadiff compares the replicated state of stopped nodes: for
// each data directory it restores the newest snapshot and replays the log
// after it up to the last index every directory's log holds, as a
// restarting node would, and compares the states there. Replicas of one
// cluster must be identical at every index; when they are not, it prints
// which directories agree and how each odd one differs from the majority
// (reservations, series, the first history event), and exits 1.
//
// It is how a chaos campaign's "replicas did not converge" is diagnosed
// after the fact, from the data directories the campaign leaves:
//
//	go run -tags hashicorpmetrics ./benchmarks/recovery/cmd/replicadiff DIR/n1 DIR/n2 DIR/n3
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"

	"github.com/ledgerd/ledgerd/benchmarks/recovery"
)

func main() {
	lines := flag.Int("max", 20, "most lines of difference printed per odd replica")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: replicadiff [-max N] DATA_DIR DATA_DIR...\n\n"+
			"Restores each stopped node's newest snapshot, replays its log to the last index all of them hold,\n"+
			"and compares the states there. Exit 0: identical; 1: they differ; 2: they cannot be compared.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) < 2 {
		flag.Usage()
		os.Exit(2)
	}
	code, err := run(dirs, *lines)
	if err != nil {
		fmt.Fprintln(os.Stderr, "replicadiff:", err)
	}
	os.Exit(code)
}

func run(dirs []string, lines int) (int, error) {
	var reps []*recovery.Replica
	common, newest := ^uint64(0), uint64(0)
	for _, d := range dirs {
		r, err := recovery.OpenReplica(d)
		if err != nil {
			return 2, err
		}
		fmt.Printf("%s: snapshot at %d, log to %d\n", d, r.SnapshotIndex, r.LogEnd)
		reps = append(reps, r)
		common, newest = min(common, r.LogEnd), max(newest, r.SnapshotIndex)
	}
	if newest > common {
		return 2, fmt.Errorf("a snapshot (at %d) lies past another log's end (%d): there is no index at which all can be compared", newest, common)
	}
	groups := map[[32]byte][]int{}
	var order [][32]byte
	for i, r := range reps {
		if err := r.ReplayTo(common); err != nil {
			return 2, err
		}
		h, err := r.StateHash()
		if err != nil {
			return 2, err
		}
		if groups[h] == nil {
			order = append(order, h)
		}
		groups[h] = append(groups[h], i)
		fmt.Printf("%s: state at %d: %x\n", r.Dir, common, h[:8])
	}
	if len(groups) == 1 {
		fmt.Printf("identical at index %d\n", common)
		return 0, nil
	}
	// The largest group is the reference (the majority, for three nodes).
	slices.SortStableFunc(order, func(a, b [32]byte) int { return len(groups[b]) - len(groups[a]) })
	ref := reps[groups[order[0]][0]]
	fmt.Printf("DIFFERENT at index %d; reference %s\n", common, ref.Dir)
	for _, h := range order[1:] {
		for _, i := range groups[h] {
			diff, err := recovery.DiffStates(ref.FSM, reps[i].FSM, lines)
			if err != nil {
				return 2, err
			}
			fmt.Printf("%s against %s:\n", reps[i].Dir, ref.Dir)
			if len(diff) == 0 {
				fmt.Println("  reservations, series and history agree; another table differs (idempotency records, limits, units)")
			}
			for _, l := range diff {
				fmt.Println("  " + l)
			}
		}
	}
	return 1, nil
}
