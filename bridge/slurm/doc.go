// Package slurm is the bridge's driver for Slurm: it lists a partition's
// nodes with their states (sinfo), lists reservations (`scontrol show
// reservation -o`, parsed by ParseReservations, which has a fuzz target),
// and creates, updates and deletes reservations by name with scontrol,
// mapping Slurm's messages to the typed errors of package bridge with the
// message kept.
//
// How it writes, and why:
//   - Nodes are always named (Nodes=n1,n2), never counted: Slurm silently
//     shrinks NodeCnt= to what is free and may put a NodeCnt reservation on
//     a node that already holds another.
//   - Windows are StartTime= and EndTime=, in whole seconds; Duration= is
//     rounded up to whole minutes by Slurm. A start that has passed is
//     written StartTime=now.
//   - scontrol converts wall-clock times in its own process's zone, so the
//     driver sets TZ for it to Config.Zone (default UTC) and reads times
//     back in the same zone: nothing depends on the zone of the machine.
//   - Reservation names carry the prefix and only [A-Za-z0-9._-]: Slurm
//     accepts "a,b" as a name, which its own key=value syntax then
//     misreads.
//   - A controller that cannot be reached is retried with exponential
//     backoff until the context ends; a create or delete whose earlier
//     attempt had an unknown outcome reads back instead of reporting its
//     own first attempt as a duplicate or a missing name.
//
// What it must not do: touch a reservation whose name lacks its prefix
// (every write checks; reading lists all of them, so the caller can report
// hand-made and MAINT reservations), use NodeCnt=, decide what should exist
// (that is bridge.Reconcile and the ledger), or keep state between calls.
//
// Caller's duties: run it as Slurm's SlurmUser, or as root with
// Config.User set to SlurmUser (commands then drop to that user);
// reservations need a Slurm administrator or operator, which SlurmUser is.
// Point Config.Env at the cluster's slurm.conf when it is not the default.
//
// Package slurmtest starts a real Slurm (munge, slurmctld and fake slurmd
// nodes) in a temporary directory for tests.
package slurm
