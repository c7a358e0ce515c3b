package main

import (
	"context"
	"fmt"

	"github.com/ledgerd/ledgerd/rpc/client"
)

// runRemovePeer removes a server from the Raft configuration: the way to
// drop a dead server for good before its grace period ends, or one that
// will never come back.
func runRemovePeer(args []string) int {
	fs, cf := newFlagSet("operator raft remove-peer", "NODE_ID")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usageErr(fs, "want exactly one node ID (see `ledgerd operator raft list-peers`)")
	}
	id := fs.Arg(0)
	return cf.withClient("operator raft remove-peer", func(ctx context.Context, c *client.Client) error {
		if err := c.RemoveServer(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(cliOut, "removed %s from the Raft configuration\n", id)
		return nil
	})
}

// runTransferLeader asks the leader to hand leadership to another voter,
// e.g. before taking the leader's host down for maintenance.
func runTransferLeader(args []string) int {
	fs, cf := newFlagSet("operator raft transfer-leader", "")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	return cf.withClient("operator raft transfer-leader", func(ctx context.Context, c *client.Client) error {
		if err := c.TransferLeadership(ctx, ""); err != nil {
			return err
		}
		fmt.Fprintln(cliOut, "leadership transferred")
		return nil
	})
}
