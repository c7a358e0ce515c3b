package main

import (
	"context"
	"fmt"
	"strings"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc/client"
)

const gossipUsage = `Usage: ledgerd operator gossip keyring (-list | -install KEY | -use KEY | -remove KEY) [flags]

Lists or changes the gossip encryption keys of every server of the
cluster. The leader applies the change to each server of the Raft
configuration, and each server keeps its keyring in DATA_DIR/keyring.json,
which it prefers to gossip_key from then on. To rotate the key:

    ledgerd keygen                              # prints NEW
    ledgerd operator gossip keyring -install NEW
    ledgerd operator gossip keyring -use NEW
    ledgerd operator gossip keyring -remove OLD

-use refuses a key some server lacks, and -remove the key a server still
encrypts with; every operation can be run again once a server that
failed is back. Update gossip_key in the configuration files afterwards,
for servers that start with an empty data dir.

Flags:
`

// runGossipKeyring runs one keyring operation on every server.
func runGossipKeyring(args []string) int {
	fs, cf := newFlagSet("operator gossip keyring", "")
	list := fs.Bool("list", false, "list every server's keys (primary first)")
	install := fs.String("install", "", "install `KEY` (base64) on every server")
	use := fs.String("use", "", "make the installed `KEY` every server's primary key")
	remove := fs.String("remove", "", "remove `KEY` from every server")
	fs.Usage = func() {
		fmt.Fprint(cliErr, gossipUsage)
		fs.PrintDefaults()
	}
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	var op ledgerdv1.KeyringOp
	var key string
	n := 0
	if *list {
		op, n = ledgerdv1.KeyringOp_KEYRING_OP_LIST, n+1
	}
	for _, o := range []struct {
		v  string
		op ledgerdv1.KeyringOp
	}{{*install, ledgerdv1.KeyringOp_KEYRING_OP_INSTALL}, {*use, ledgerdv1.KeyringOp_KEYRING_OP_USE}, {*remove, ledgerdv1.KeyringOp_KEYRING_OP_REMOVE}} {
		if o.v != "" {
			op, key, n = o.op, o.v, n+1
		}
	}
	if n != 1 {
		return usageErr(fs, "want exactly one of -list, -install KEY, -use KEY, -remove KEY")
	}
	return cf.withClient("operator gossip keyring", func(ctx context.Context, c *client.Client) error {
		ms, err := c.GossipKeyring(ctx, op, key)
		if err != nil {
			return err
		}
		if cf.json {
			printJSON(&ledgerdv1.GossipKeyringResponse{Members: ms})
			return nil
		}
		w := table()
		fmt.Fprintln(w, "NODE ID\tNAME\tPRIMARY KEY\tOTHER KEYS")
		for _, m := range ms {
			primary, others := "-", "-"
			if len(m.Keys) > 0 {
				primary = m.Keys[0]
			}
			if len(m.Keys) > 1 {
				others = strings.Join(m.Keys[1:], ",")
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", m.Id, m.Name, primary, others)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if op != ledgerdv1.KeyringOp_KEYRING_OP_LIST {
			fmt.Fprintf(cliOut, "%s done on %d servers\n", strings.ToLower(strings.TrimPrefix(op.String(), "KEYRING_OP_")), len(ms))
		}
		return nil
	})
}
