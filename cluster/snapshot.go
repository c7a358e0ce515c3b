package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// userSnapshotHeader starts a snapshot file written by SaveSnapshot. The
// next line is the Raft snapshot metadata as JSON; the FSM's snapshot bytes
// follow.
const userSnapshotHeader = "ledgerd-snapshot v1"

// SnapshotInfo describes a saved snapshot.
type SnapshotInfo struct {
	ID    string
	Index uint64
	Term  uint64
	Size  int64
}

// SaveSnapshot takes a Raft snapshot now and writes it to w in a format
// RestoreSnapshot accepts. It works on any node and reflects that node's
// applied state.
func (n *Node) SaveSnapshot(ctx context.Context, w io.Writer) (SnapshotInfo, error) {
	if n.closed.Load() {
		return SnapshotInfo{}, fmt.Errorf("cluster: save snapshot: %w", ErrShutdown)
	}
	fut, err := n.snapshotNow(ctx)
	if err != nil {
		return SnapshotInfo{}, err
	}
	meta, rc, err := fut.Open()
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("cluster: open snapshot: %w", err)
	}
	defer rc.Close()
	hdr, err := json.Marshal(meta)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("cluster: encode snapshot meta: %w", err)
	}
	if _, err := fmt.Fprintf(w, "%s\n%s\n", userSnapshotHeader, hdr); err != nil {
		return SnapshotInfo{}, fmt.Errorf("cluster: write snapshot: %w", err)
	}
	size, err := io.Copy(w, rc)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("cluster: write snapshot: %w", err)
	}
	return SnapshotInfo{ID: meta.ID, Index: meta.Index, Term: meta.Term, Size: size}, nil
}

// snapshotNow takes a Raft snapshot and waits for it to be persisted.
func (n *Node) snapshotNow(ctx context.Context) (raft.SnapshotFuture, error) {
	for {
		fut := n.raft.Snapshot()
		err := n.waitFuture(ctx, "snapshot", fut)
		if err == nil {
			return fut, nil
		}
		// Raft refuses to snapshot while a configuration change is
		// committed but not yet applied; that clears within moments.
		if !strings.Contains(err.Error(), "wait until the configuration entry") {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster: snapshot: %w", ctx.Err())
		case <-n.ctx.Done():
			return nil, fmt.Errorf("cluster: snapshot: %w", ErrShutdown)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// shutdownSnapshot snapshots before a graceful stop so the next start
// restores it instead of replaying the log since the last automatic
// snapshot. Nothing new since the last snapshot is not an error.
func (n *Node) shutdownSnapshot(ctx context.Context) {
	start := time.Now()
	if _, err := n.snapshotNow(ctx); err != nil {
		if errors.Is(err, raft.ErrNothingNewToSnapshot) {
			n.log.Info("shutdown snapshot: nothing new since the last snapshot", "applied", n.fsm.Applied())
			return
		}
		n.log.Warn("shutdown snapshot failed; the next start replays the log since the last snapshot", "err", err)
		return
	}
	n.log.Info("shutdown snapshot taken", "applied", n.fsm.Applied(), "took", time.Since(start).Round(time.Millisecond))
}

// RestoreSnapshot replaces the whole cluster's state with a snapshot written
// by SaveSnapshot. Leader only. This is disaster recovery: every write since
// the snapshot is discarded on every node.
func (n *Node) RestoreSnapshot(ctx context.Context, r io.Reader) error {
	if n.closed.Load() {
		return fmt.Errorf("cluster: restore snapshot: %w", ErrShutdown)
	}
	if n.raft.State() != raft.Leader {
		return fmt.Errorf("cluster: restore snapshot: %w", ErrNotLeader)
	}
	br := bufio.NewReader(r)
	line, err := br.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != userSnapshotHeader {
		return &BadSnapshotError{fmt.Errorf("not a ledgerd snapshot file (first line %q)", strings.TrimSpace(line))}
	}
	line, err = br.ReadString('\n')
	if err != nil {
		return &BadSnapshotError{fmt.Errorf("read metadata: %w", err)}
	}
	var meta raft.SnapshotMeta
	if err := json.Unmarshal([]byte(line), &meta); err != nil {
		return &BadSnapshotError{fmt.Errorf("decode metadata: %w", err)}
	}
	// The whole body is read and checked before raft sees it: raft
	// stores a user snapshot and then stops the process if the state
	// machine refuses it, which a corrupted or cut file would make it do.
	body, err := io.ReadAll(br)
	if err != nil {
		return fmt.Errorf("cluster: restore snapshot: read: %w", err)
	}
	if err := n.fsm.verify(body); err != nil {
		return &BadSnapshotError{err}
	}
	// Raft refuses a restore while the latest configuration change is not
	// yet applied (it would be lost); wait for it first.
	for {
		cf := n.raft.GetConfiguration()
		if err := cf.Error(); err != nil {
			return fmt.Errorf("cluster: restore snapshot: %w", mapRaftErr(err))
		}
		if n.raft.AppliedIndex() >= cf.Index() {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: restore snapshot: %w", ctx.Err())
		case <-n.ctx.Done():
			return fmt.Errorf("cluster: restore snapshot: %w", ErrShutdown)
		case <-time.After(10 * time.Millisecond):
		}
	}
	ctx, cancel := n.bound(ctx)
	defer cancel()
	timeout := time.Minute
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Millisecond)
	}
	// raft.Restore ends by waiting on a no-op it queues in the apply
	// channel, a future raft does not answer if it shuts down first, so
	// it runs aside while this waits for it, ctx and shutdown. If the wait
	// gives up, the restore may still complete.
	done := make(chan error, 1)
	go func() { done <- n.raft.Restore(&meta, bytes.NewReader(body), timeout) }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("cluster: restore snapshot: %w", mapRaftErr(err))
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cluster: restore snapshot: outcome unknown: %w", context.Cause(ctx))
	}
}
