package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/ledgerd/ledgerd/cluster"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
	"github.com/ledgerd/ledgerd/ledger/replicated"
	"github.com/ledgerd/ledgerd/rpc"
)

// clusterOps is the agent's ClusterService backend: the ledger's cluster
// operations plus the gossip keyring (rpc.GossipKeyring), which talks to
// the node directly.
type clusterOps struct {
	replicated.Cluster
}

// keyringOps maps the API's operations to the cluster's.
var keyringOps = map[ledgerdv1.KeyringOp]cluster.KeyringOp{
	ledgerdv1.KeyringOp_KEYRING_OP_LIST:    cluster.KeyringList,
	ledgerdv1.KeyringOp_KEYRING_OP_INSTALL: cluster.KeyringInstall,
	ledgerdv1.KeyringOp_KEYRING_OP_USE:     cluster.KeyringUse,
	ledgerdv1.KeyringOp_KEYRING_OP_REMOVE:  cluster.KeyringRemove,
}

// GossipKeyring implements rpc.GossipKeyring.
func (c clusterOps) GossipKeyring(ctx context.Context, op ledgerdv1.KeyringOp, key string) ([]*ledgerdv1.KeyringMember, error) {
	kop, ok := keyringOps[op]
	if !ok {
		return nil, &ledger.FieldError{Field: "op", Reason: fmt.Sprintf("unknown operation %v", op)}
	}
	ms, err := c.Node.GossipKeyring(ctx, kop, key)
	out := make([]*ledgerdv1.KeyringMember, len(ms))
	for i, m := range ms {
		out[i] = &ledgerdv1.KeyringMember{Id: m.ID, Name: m.Name, Keys: m.Keys, Error: m.Err}
	}
	switch {
	case err == nil:
		return out, nil
	case errors.Is(err, cluster.ErrNoLeader), errors.Is(err, cluster.ErrNotLeader), errors.Is(err, cluster.ErrShutdown):
		return out, fmt.Errorf("%w: %w", ledger.ErrUnavailable, err)
	default:
		// Refused (a server lacks the key, the key is primary), no
		// keyring, or some servers failed: the operator fixes that and
		// runs the idempotent operation again.
		return out, fmt.Errorf("%w: %w", ledger.ErrWrongState, err)
	}
}

var _ rpc.GossipKeyring = clusterOps{}
