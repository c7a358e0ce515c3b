package rpc

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"connectrpc.com/connect"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/gen/ledgerd/v1/ledgerdv1connect"
	"github.com/ledgerd/ledgerd/ledger"
)

// clusterSvc implements ClusterService; every call needs the operator role.
type clusterSvc struct {
	ledgerdv1connect.UnimplementedClusterServiceHandler
	s *Server
}

// snapshotChunk is the size of one SaveSnapshot message.
const snapshotChunk = 256 << 10

func (h *clusterSvc) cluster(ctx context.Context) (ledger.Cluster, error) {
	if _, err := requireOperator(ctx); err != nil {
		return nil, err
	}
	if h.s.opts.Cluster == nil {
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("cluster operations are not available on this server"))
	}
	return h.s.opts.Cluster, nil
}

// Members implements ClusterService.Members.
func (h *clusterSvc) Members(ctx context.Context, _ *connect.Request[ledgerdv1.MembersRequest]) (*connect.Response[ledgerdv1.MembersResponse], error) {
	c, err := h.cluster(ctx)
	if err != nil {
		return nil, err
	}
	ms, err := c.Members(ctx)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.MembersResponse{Members: ms}), nil
}

// Leader implements ClusterService.Leader.
func (h *clusterSvc) Leader(ctx context.Context, _ *connect.Request[ledgerdv1.LeaderRequest]) (*connect.Response[ledgerdv1.LeaderResponse], error) {
	c, err := h.cluster(ctx)
	if err != nil {
		return nil, err
	}
	l, err := c.Leader(ctx)
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(l), nil
}

// TransferLeadership implements ClusterService.TransferLeadership.
func (h *clusterSvc) TransferLeadership(ctx context.Context, req *connect.Request[ledgerdv1.TransferLeadershipRequest]) (*connect.Response[ledgerdv1.TransferLeadershipResponse], error) {
	c, err := h.cluster(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.TransferLeadership(ctx, req.Msg.TargetId); err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.TransferLeadershipResponse{}), nil
}

// RemoveServer implements ClusterService.RemoveServer.
func (h *clusterSvc) RemoveServer(ctx context.Context, req *connect.Request[ledgerdv1.RemoveServerRequest]) (*connect.Response[ledgerdv1.RemoveServerResponse], error) {
	c, err := h.cluster(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkID("id", req.Msg.Id); err != nil {
		return nil, h.s.fail(err)
	}
	if err := c.RemoveServer(ctx, req.Msg.Id); err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.RemoveServerResponse{}), nil
}

// chunkWriter sends everything written to it as SaveSnapshot chunks.
type chunkWriter struct {
	stream *connect.ServerStream[ledgerdv1.SaveSnapshotResponse]
	buf    []byte
}

// Write implements io.Writer, sending a chunk whenever one is full.
func (w *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), snapshotChunk-len(w.buf))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if len(w.buf) == snapshotChunk {
			if err := w.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (w *chunkWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	err := w.stream.Send(&ledgerdv1.SaveSnapshotResponse{Chunk: w.buf})
	w.buf = w.buf[:0]
	if err != nil {
		return fmt.Errorf("snapshot: send chunk: %w", err)
	}
	return nil
}

// SaveSnapshot implements ClusterService.SaveSnapshot; the version goes out
// in a final message with an empty chunk.
func (h *clusterSvc) SaveSnapshot(ctx context.Context, _ *connect.Request[ledgerdv1.SaveSnapshotRequest], stream *connect.ServerStream[ledgerdv1.SaveSnapshotResponse]) error {
	c, err := h.cluster(ctx)
	if err != nil {
		return err
	}
	w := &chunkWriter{stream: stream, buf: make([]byte, 0, snapshotChunk)}
	v, err := c.SaveSnapshot(ctx, w)
	if err != nil {
		return h.s.fail(err)
	}
	if err := w.flush(); err != nil {
		return err
	}
	if err := stream.Send(&ledgerdv1.SaveSnapshotResponse{Version: v}); err != nil {
		return fmt.Errorf("snapshot: send trailer: %w", err)
	}
	return nil
}

// streamReader reads RestoreSnapshot chunks as one byte stream.
type streamReader struct {
	stream *connect.ClientStream[ledgerdv1.RestoreSnapshotRequest]
	buf    []byte
}

// Read implements io.Reader over the received chunks.
func (r *streamReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if !r.stream.Receive() {
			if err := r.stream.Err(); err != nil {
				return 0, fmt.Errorf("snapshot: receive chunk: %w", err)
			}
			return 0, io.EOF
		}
		r.buf = r.stream.Msg().Chunk
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// RestoreSnapshot implements ClusterService.RestoreSnapshot.
func (h *clusterSvc) RestoreSnapshot(ctx context.Context, stream *connect.ClientStream[ledgerdv1.RestoreSnapshotRequest]) (*connect.Response[ledgerdv1.RestoreSnapshotResponse], error) {
	c, err := h.cluster(ctx)
	if err != nil {
		return nil, err
	}
	v, err := c.RestoreSnapshot(ctx, &streamReader{stream: stream})
	if err != nil {
		return nil, h.s.fail(err)
	}
	return connect.NewResponse(&ledgerdv1.RestoreSnapshotResponse{Version: v}), nil
}

// GossipKeyring is the optional part of Options.Cluster behind
// ClusterService.GossipKeyring: a Cluster that also implements it serves
// the call, any other answers Unimplemented. op is never
// KEYRING_OP_UNSPECIFIED, and key (base64 of 16, 24 or 32 bytes) is
// checked except for KEYRING_OP_LIST. On a partial failure it returns the
// members with the error.
type GossipKeyring interface {
	GossipKeyring(ctx context.Context, op ledgerdv1.KeyringOp, key string) ([]*ledgerdv1.KeyringMember, error)
}

// GossipKeyring implements ClusterService.GossipKeyring.
func (h *clusterSvc) GossipKeyring(ctx context.Context, req *connect.Request[ledgerdv1.GossipKeyringRequest]) (*connect.Response[ledgerdv1.GossipKeyringResponse], error) {
	c, err := h.cluster(ctx)
	if err != nil {
		return nil, err
	}
	kr, ok := c.(GossipKeyring)
	if !ok {
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("gossip keyring operations are not available on this server"))
	}
	if err := checkKeyringRequest(req.Msg); err != nil {
		return nil, toConnect(err)
	}
	ms, err := kr.GossipKeyring(ctx, req.Msg.Op, req.Msg.Key)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&ledgerdv1.GossipKeyringResponse{Members: ms}), nil
}

// checkKeyringRequest names the field of a bad keyring request.
func checkKeyringRequest(r *ledgerdv1.GossipKeyringRequest) error {
	switch r.Op {
	case ledgerdv1.KeyringOp_KEYRING_OP_LIST:
		if r.Key != "" {
			return &ledger.FieldError{Field: "key", Reason: "must be empty for KEYRING_OP_LIST"}
		}
		return nil
	case ledgerdv1.KeyringOp_KEYRING_OP_INSTALL, ledgerdv1.KeyringOp_KEYRING_OP_USE, ledgerdv1.KeyringOp_KEYRING_OP_REMOVE:
	default:
		return &ledger.FieldError{Field: "op", Reason: fmt.Sprintf("want KEYRING_OP_LIST, _INSTALL, _USE or _REMOVE, got %v", r.Op)}
	}
	k, err := base64.StdEncoding.DecodeString(r.Key)
	if err != nil {
		return &ledger.FieldError{Field: "key", Reason: "not base64 (make a key with `ledgerd keygen`)"}
	}
	if n := len(k); n != 16 && n != 24 && n != 32 {
		return &ledger.FieldError{Field: "key", Reason: fmt.Sprintf("must decode to 16, 24 or 32 bytes, got %d", n)}
	}
	return nil
}
