package client

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"connectrpc.com/connect"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// Members lists the cluster's servers (operator).
func (c *Client) Members(ctx context.Context) ([]*ledgerdv1.Member, error) {
	return do(ctx, c, spread, func(ctx context.Context, ep *endpoint) ([]*ledgerdv1.Member, error) {
		out, err := ep.cluster.Members(ctx, connect.NewRequest(&ledgerdv1.MembersRequest{}))
		if err != nil {
			return nil, err
		}
		return out.Msg.Members, nil
	})
}

// Leader returns the current leader (operator).
func (c *Client) Leader(ctx context.Context) (*ledgerdv1.LeaderResponse, error) {
	return do(ctx, c, spread, func(ctx context.Context, ep *endpoint) (*ledgerdv1.LeaderResponse, error) {
		out, err := ep.cluster.Leader(ctx, connect.NewRequest(&ledgerdv1.LeaderRequest{}))
		if err != nil {
			return nil, err
		}
		return out.Msg, nil
	})
}

// TransferLeadership asks the leader to hand over, to target if not empty.
func (c *Client) TransferLeadership(ctx context.Context, target string) error {
	_, err := do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (struct{}, error) {
		_, err := ep.cluster.TransferLeadership(ctx, connect.NewRequest(&ledgerdv1.TransferLeadershipRequest{TargetId: target}))
		return struct{}{}, err
	})
	return err
}

// RemoveServer removes a server from the Raft configuration.
func (c *Client) RemoveServer(ctx context.Context, id string) error {
	_, err := do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) (struct{}, error) {
		_, err := ep.cluster.RemoveServer(ctx, connect.NewRequest(&ledgerdv1.RemoveServerRequest{Id: id}))
		return struct{}{}, err
	})
	return err
}

// GossipKeyring lists or changes the gossip encryption keys of every
// server (operator): op is one of the KEYRING_OP_ values, key the base64
// key (empty for KEYRING_OP_LIST). It returns every server's keyring
// afterwards. The operations are idempotent, so a retry is safe.
func (c *Client) GossipKeyring(ctx context.Context, op ledgerdv1.KeyringOp, key string) ([]*ledgerdv1.KeyringMember, error) {
	return do(ctx, c, toLeader, func(ctx context.Context, ep *endpoint) ([]*ledgerdv1.KeyringMember, error) {
		out, err := ep.cluster.GossipKeyring(ctx, connect.NewRequest(&ledgerdv1.GossipKeyringRequest{Op: op, Key: key}))
		if err != nil {
			return nil, err
		}
		return out.Msg.Members, nil
	})
}

// SaveSnapshot downloads a snapshot into w and returns its version. It is
// not retried: a broken download leaves w partly written.
func (c *Client) SaveSnapshot(ctx context.Context, w io.Writer) (uint64, error) {
	ep := c.eps[c.next.Load()%uint64(len(c.eps))]
	stream, err := ep.cluster.SaveSnapshot(ctx, connect.NewRequest(&ledgerdv1.SaveSnapshotRequest{}))
	if err != nil {
		return 0, fmt.Errorf("client: save snapshot: %w", err)
	}
	defer stream.Close()
	var version uint64
	for stream.Receive() {
		m := stream.Msg()
		if len(m.Chunk) > 0 {
			if _, err := w.Write(m.Chunk); err != nil {
				return 0, fmt.Errorf("client: save snapshot: write: %w", err)
			}
		}
		if m.Version != 0 {
			version = m.Version
		}
	}
	if err := stream.Err(); err != nil {
		return 0, fmt.Errorf("client: save snapshot: %w", err)
	}
	return version, nil
}

// RestoreSnapshot uploads the snapshot read from r to the leader (only the
// leader restores). When r is an io.Seeker (a file, a bytes.Reader) a
// restore that failed with Unavailable — e.g. leadership lost while it was
// being committed — is retried from the start; restoring the same snapshot
// twice ends in the same state. Other readers are tried once.
func (c *Client) RestoreSnapshot(ctx context.Context, r io.Reader) (uint64, error) {
	seeker, ok := r.(io.Seeker)
	if !ok {
		return c.restoreOnce(ctx, r)
	}
	origin, err := seeker.Seek(0, io.SeekCurrent)
	if err != nil {
		return c.restoreOnce(ctx, r)
	}
	return do(ctx, c, spread, func(_ context.Context, _ *endpoint) (uint64, error) {
		if _, err := seeker.Seek(origin, io.SeekStart); err != nil {
			return 0, fmt.Errorf("client: restore snapshot: rewind: %w", err)
		}
		return c.restoreOnce(ctx, r)
	})
}

// restoreOnce streams r to the leader once.
func (c *Client) restoreOnce(ctx context.Context, r io.Reader) (uint64, error) {
	ep := c.leaderEndpoint(ctx)
	stream := ep.cluster.RestoreSnapshot(ctx)
	buf := make([]byte, 256<<10)
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			if err := stream.Send(&ledgerdv1.RestoreSnapshotRequest{Chunk: bytes.Clone(buf[:n])}); err != nil {
				if _, cerr := stream.CloseAndReceive(); cerr != nil {
					return 0, fmt.Errorf("client: restore snapshot: %w", cerr)
				}
				return 0, fmt.Errorf("client: restore snapshot: send: %w", err)
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			_, _ = stream.CloseAndReceive()
			return 0, fmt.Errorf("client: restore snapshot: read: %w", rerr)
		}
	}
	resp, err := stream.CloseAndReceive()
	if err != nil {
		return 0, fmt.Errorf("client: restore snapshot: %w", err)
	}
	return resp.Msg.Version, nil
}
