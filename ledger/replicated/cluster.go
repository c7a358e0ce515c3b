package replicated

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ledgerd/ledgerd/cluster"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/ledger"
)

// Cluster implements Cluster on a cluster.Node. Leader-only operations
// (TransferLeadership, RemoveServer, RestoreSnapshot) fail with Unavailable
// on followers, so a retrying client moves on until it reaches the leader.
type Cluster struct {
	Node *cluster.Node
}

var _ ledger.Cluster = Cluster{}

// roles maps cluster.Member roles to the API's.
var roles = map[string]ledgerdv1.Role{
	"leader":   ledgerdv1.Role_ROLE_LEADER,
	"voter":    ledgerdv1.Role_ROLE_FOLLOWER,
	"nonvoter": ledgerdv1.Role_ROLE_NONVOTER,
}

// Members implements Cluster.
func (c Cluster) Members(context.Context) ([]*ledgerdv1.Member, error) {
	ms := c.Node.Members()
	out := make([]*ledgerdv1.Member, len(ms))
	for i, m := range ms {
		out[i] = &ledgerdv1.Member{
			Id: m.ID, RaftAddress: m.RaftAddr, ApiAddress: m.RPCAddr, Role: roles[m.Role],
			Healthy: m.Health == "alive" && m.Role != "none", Status: m.Health, Insecure: m.Insecure,
		}
	}
	return out, nil
}

// Leader implements Cluster.
func (c Cluster) Leader(context.Context) (*ledgerdv1.LeaderResponse, error) {
	id, api := c.Node.Leader()
	out := &ledgerdv1.LeaderResponse{Id: id, ApiAddress: api}
	for _, m := range c.Node.Members() {
		if m.ID == id {
			out.RaftAddress = m.RaftAddr
		}
	}
	return out, nil
}

// TransferLeadership implements Cluster; the cluster layer lets Raft pick
// the successor, so a target cannot be named.
func (c Cluster) TransferLeadership(ctx context.Context, target string) error {
	if target != "" {
		return &ledger.FieldError{Field: "target_id", Reason: "naming the successor is not supported; leave it empty"}
	}
	if err := c.Node.TransferLeadership(ctx); err != nil {
		if errors.Is(err, cluster.ErrNoOtherVoter) {
			return fmt.Errorf("transfer leadership: %w: %w", ledger.ErrWrongState, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("transfer leadership: %w", ctx.Err())
		}
		// A transfer that timed out or raced an election leaves the
		// cluster as it was; asking again is safe, so say Unavailable.
		return fmt.Errorf("transfer leadership: %w: %w", ledger.ErrUnavailable, err)
	}
	return nil
}

// RemoveServer implements Cluster.
func (c Cluster) RemoveServer(ctx context.Context, id string) error {
	if err := c.Node.RemoveServer(ctx, id); err != nil {
		switch {
		case errors.Is(err, cluster.ErrUnknownServer):
			return fmt.Errorf("remove server: %w: %w", ledger.ErrNotFound, err)
		case errors.Is(err, cluster.ErrIsLeader):
			return fmt.Errorf("remove server: %w: %w", ledger.ErrWrongState, err)
		}
		return clusterErr("remove server", err)
	}
	return nil
}

// SaveSnapshot implements Cluster.
func (c Cluster) SaveSnapshot(ctx context.Context, w io.Writer) (uint64, error) {
	info, err := c.Node.SaveSnapshot(ctx, w)
	if err != nil {
		return 0, clusterErr("save snapshot", err)
	}
	return info.Index, nil
}

// RestoreSnapshot implements Cluster.
func (c Cluster) RestoreSnapshot(ctx context.Context, r io.Reader) (uint64, error) {
	if err := c.Node.RestoreSnapshot(ctx, r); err != nil {
		if be := (*cluster.BadSnapshotError)(nil); errors.As(err, &be) {
			// The stream's bytes are the request's chunks.
			return 0, &ledger.FieldError{Field: "chunk", Reason: "not a snapshot this ledger can restore: " + be.Reason.Error()}
		}
		return 0, clusterErr("restore snapshot", err)
	}
	if err := c.Node.ReadBarrier(ctx); err != nil {
		return 0, clusterErr("restore snapshot", err)
	}
	return c.Node.AppliedIndex(), nil
}

// String names the node, for logs.
func (c Cluster) String() string { return fmt.Sprintf("node %s", c.Node.ID()) }
