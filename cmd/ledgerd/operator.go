package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/ledgerd/ledgerd/agent"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc/client"
)

func init() {
	register("operator", "Operator tools: `operator raft list-peers | remove-peer | transfer-leader | recover`, `operator gossip keyring`", runOperator)
}

const operatorUsage = `Usage: ledgerd operator raft <subcommand> [options]
       ledgerd operator gossip keyring -list | -install KEY | -use KEY | -remove KEY

Subcommands:
    list-peers       list the Raft servers: id, address, state, voter, leader
    remove-peer ID   remove a server from the Raft configuration (leader only;
                     transfer leadership first to remove the leader)
    transfer-leader  hand leadership to another voter
    recover          turn a stopped server's data into a one-server cluster
                     after a lost quorum (see cluster/DESIGN.md)

    gossip keyring   list, install, use or remove gossip encryption keys on
                     every server (rotate the gossip key without downtime)
`

func runOperator(args []string) int {
	if len(args) >= 2 && args[0] == "gossip" && args[1] == "keyring" {
		return runGossipKeyring(args[2:])
	}
	if len(args) >= 1 && args[0] == "gossip" {
		fmt.Fprint(cliErr, gossipUsage)
		return exitUsage
	}
	if len(args) < 2 || args[0] != "raft" {
		fmt.Fprint(cliErr, operatorUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			return exitOK
		}
		return exitUsage
	}
	switch args[1] {
	case "list-peers":
		return runListPeers(args[2:])
	case "recover":
		return runRecover(args[2:])
	case "remove-peer":
		return runRemovePeer(args[2:])
	case "transfer-leader":
		return runTransferLeader(args[2:])
	}
	fmt.Fprintf(cliErr, "ledgerd operator raft: unknown subcommand %q\n\n%s", args[1], operatorUsage)
	return exitUsage
}

// peerRow is one line of list-peers, derived from the API's member.
type peerRow struct {
	ID, Address, State string
	Voter, Leader      bool
}

func peerRows(ms []*ledgerdv1.Member) []peerRow {
	out := make([]peerRow, 0, len(ms))
	for _, m := range ms {
		state := m.GetStatus()
		if state == "" {
			state = "unknown"
		}
		r := m.GetRole()
		out = append(out, peerRow{
			ID: m.GetId(), Address: m.GetRaftAddress(), State: state,
			Voter:  r == ledgerdv1.Role_ROLE_LEADER || r == ledgerdv1.Role_ROLE_FOLLOWER || r == ledgerdv1.Role_ROLE_CANDIDATE,
			Leader: r == ledgerdv1.Role_ROLE_LEADER,
		})
	}
	return out
}

func runListPeers(args []string) int {
	fs, cf := newFlagSet("operator raft list-peers", "")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	return cf.withClient("operator raft list-peers", func(ctx context.Context, c *client.Client) error {
		ms, err := c.Members(ctx)
		if err != nil {
			return err
		}
		if cf.json {
			printJSON(&ledgerdv1.MembersResponse{Members: ms})
			return nil
		}
		w := table()
		fmt.Fprintln(w, "NODE ID\tADDRESS\tSTATE\tVOTER\tLEADER")
		for _, r := range peerRows(ms) {
			fmt.Fprintf(w, "%s\t%s\t%s\t%t\t%t\n", r.ID, r.Address, r.State, r.Voter, r.Leader)
		}
		return w.Flush()
	})
}

const recoverUsage = `Usage: ledgerd operator raft recover [-config FILE] [-data-dir DIR] [-raft-addr HOST:PORT]

Run on ONE surviving server, with every ledgerd agent of the cluster
stopped, when a majority of servers is lost for good. It replays the
server's snapshot and log into a fresh ledger, writes a snapshot whose Raft
configuration holds this server alone, and truncates the log. Start this
agent afterwards: it leads a one-server cluster with all the data it had.
Wipe the data directory of every other old server before starting it; they
join as new servers. Writes this server never received are lost: pick the
survivor with the highest last index (ledgerd_raft_last_index).

With -truncate-from INDEX it first drops the log entries from INDEX on:
the way out when every server stops on a committed entry it cannot apply
and no release can apply it (docs/operations.md, "A node stopped on an
entry it cannot apply"). Those entries were never applied anywhere, so no
write among them was acknowledged, but they are lost.

Options:
`

func runRecover(args []string) int {
	fs := flag.NewFlagSet("operator raft recover", flag.ContinueOnError)
	fs.SetOutput(cliErr)
	configFile := fs.String("config", "", "the agent's JSON config file (data_dir, raft_advertise or raft_addr)")
	dataDir := fs.String("data-dir", "", "the server's data directory (overrides the config file)")
	raftAddr := fs.String("raft-addr", "", "the Raft address the server advertises (overrides the config file)")
	truncateFrom := fs.Uint64("truncate-from", 0, "drop the log entries from this index on before the replay (0: keep the whole log)")
	fs.Usage = func() {
		fmt.Fprint(cliErr, recoverUsage)
		fs.PrintDefaults()
	}
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	plan, err := agent.PlanRecovery(*configFile, *dataDir, *raftAddr)
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	info, err := plan.TruncatingFrom(*truncateFrom).Run()
	if err != nil {
		return fail("operator raft recover", err)
	}
	var prev []string
	for _, s := range info.Previous {
		prev = append(prev, fmt.Sprintf("%s (%s)", s.ID, s.Address))
	}
	if info.Dropped > 0 {
		fmt.Fprintf(cliOut, "dropped %d log entries from index %d on; they are lost\n", info.Dropped, *truncateFrom)
	}
	fmt.Fprintf(cliOut, `recovered %s at %s as a one-server cluster
  last index: %d; resources: %d; holds outstanding: %d
  previous configuration: %s
Next: wipe the data directory of every other old server, start this agent,
then start the others; they join as new servers.
`, info.ID, info.RaftAddr, info.LastIndex, info.Resources, info.HoldsOutstanding, strings.Join(prev, ", "))
	return exitOK
}
