package cluster

// HadState reports whether Raft state (a log or a snapshot) existed on
// disk when the node started: false for a server of a new cluster, or one
// joining with an empty data dir.
func (n *Node) HadState() bool { return n.hadState }
