package cluster

import (
	"context"
	"fmt"
	"net/http"

	"github.com/hashicorp/raft"
)

// Node is one ledgerd server: a Raft replica plus its gossip member.
type Node struct {
	cfg Config
	fsm raft.FSM
}

// New starts a node.
func New(cfg Config, fsm raft.FSM) (*Node, error) {
	return nil, fmt.Errorf("cluster: not implemented yet: %w", ErrShutdown)
}

// Apply replicates cmd and returns the FSM's result.
func (n *Node) Apply(ctx context.Context, cmd []byte) ([]byte, error) {
	return nil, ErrShutdown
}

// ReadBarrier waits until the local FSM reflects every acknowledged write.
func (n *Node) ReadBarrier(ctx context.Context) error { return ErrShutdown }

// Handler serves the internal endpoints.
func (n *Node) Handler() http.Handler { return http.NotFoundHandler() }

// Leader returns the leader's server ID and RPC address.
func (n *Node) Leader() (id, rpcAddr string) { return "", "" }

// Members lists the servers.
func (n *Node) Members() []Member { return nil }

// Shutdown stops the node.
func (n *Node) Shutdown(ctx context.Context) error { return nil }
