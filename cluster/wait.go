package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// Nothing waits forever (design invariant 11): every wait on a Raft
// future, a channel or a peer in this package also watches the node's
// shutdown and a deadline. hashicorp/raft does not answer futures still
// queued in its buffered apply channel when it shuts down (upstream issue
// 498), and Restore waits on such a future itself, so a bare f.Error()
// can hang forever.

// maxWait bounds a wait whose caller gave no deadline. Raft answers a
// future it has taken within an election timeout plus a disk write; the
// bound only matters for a future raft lost or a disk that hangs.
const maxWait = time.Minute

// stopWait bounds each step of stopping a node (leaving goroutines
// behind, and saying so, rather than hanging the caller).
const stopWait = 15 * time.Second

// bound returns a context that ends with ctx, with the node's shutdown
// (cause ErrShutdown) and, when ctx has no deadline, after maxWait.
func (n *Node) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(n.ctx, func() { cancel(ErrShutdown) })
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() { stop(); cancel(context.Canceled) }
	}
	tctx, tcancel := context.WithTimeoutCause(ctx, maxWait, fmt.Errorf("no answer within %s: %w", maxWait, context.DeadlineExceeded))
	return tctx, func() { stop(); tcancel(); cancel(context.Canceled) }
}

// waitFuture waits for f, for ctx, for the node's shutdown and at most
// maxWait when ctx has no deadline. When it gives up first, its waiter
// goroutine stays on the future (which raft may never answer).
func (n *Node) waitFuture(ctx context.Context, what string, f raft.Future) error {
	ctx, cancel := n.bound(ctx)
	defer cancel()
	ch := make(chan error, 1)
	go func() { ch <- f.Error() }()
	select {
	case err := <-ch:
		if err != nil {
			return fmt.Errorf("cluster: %s: %w", what, mapRaftErr(err))
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cluster: %s: %w", what, context.Cause(ctx))
	}
}

// waitDone waits up to d for done, the end of a goroutine this node
// started; when d passes first it logs and reports false, and the caller
// goes on without it.
func (n *Node) waitDone(done <-chan struct{}, d time.Duration, what string) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		n.log.Error("still waiting after the deadline; going on without it", "what", what, "waited", d)
		return false
	}
}

// closedCh returns a channel closed when f returns.
func closedCh(f func()) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		f()
	}()
	return ch
}
