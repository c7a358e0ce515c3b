package agent

import (
	"fmt"
	"net"

	"github.com/ledgerd/ledgerd/cluster"
	"github.com/ledgerd/ledgerd/fsm"
)

// RecoveryPlan says which server's data `ledgerd operator raft recover`
// turns into a one-server cluster, and how its log is replayed.
type RecoveryPlan struct {
	cluster cluster.RecoverConfig
	fsm     fsm.Config
}

// Recovery is what a recovery did.
type Recovery struct {
	cluster.RecoverInfo
	// Resources and HoldsOutstanding describe the recovered ledger.
	Resources, HoldsOutstanding int
}

// PlanRecovery resolves the data directory and Raft address from the
// agent's config file and the flags (flags win). Its errors are usage
// errors: they name the flag or key that is missing or wrong.
func PlanRecovery(configFile, dataDir, raftAddr string) (RecoveryPlan, error) {
	var p RecoveryPlan
	if configFile != "" {
		cfg := DefaultConfig()
		if err := loadConfigFile(configFile, &cfg); err != nil {
			return p, err
		}
		// The log is replayed as the agent applies it.
		p.fsm = cfg.fsmConfig()
		p.cluster.DataDir = cfg.DataDir
		p.cluster.RaftAddr = cfg.RaftAdvertise
		if p.cluster.RaftAddr == "" {
			p.cluster.RaftAddr = cfg.RaftAddr
		}
	}
	if dataDir != "" {
		p.cluster.DataDir = dataDir
	}
	if raftAddr != "" {
		p.cluster.RaftAddr = raftAddr
	}
	if p.cluster.DataDir == "" {
		return p, fmt.Errorf("-data-dir (or data_dir in -config) is required")
	}
	host, _, err := net.SplitHostPort(p.cluster.RaftAddr)
	if err != nil {
		return p, fmt.Errorf("-raft-addr (or raft_advertise/raft_addr in -config) must be host:port, got %q", p.cluster.RaftAddr)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return p, fmt.Errorf("-raft-addr: %q is not an address peers can dial; give the advertised one", p.cluster.RaftAddr)
	}
	return p, nil
}

// TruncatingFrom returns the plan with the log entries from index on
// dropped before the replay (cluster.RecoverConfig.TruncateFrom): for a
// committed entry every replica stops on. 0 keeps the whole log.
func (p RecoveryPlan) TruncatingFrom(index uint64) RecoveryPlan {
	p.cluster.TruncateFrom = index
	return p
}

// DataDir is the data directory the plan recovers.
func (p RecoveryPlan) DataDir() string { return p.cluster.DataDir }

// RaftAddr is the address the recovered server advertises.
func (p RecoveryPlan) RaftAddr() string { return p.cluster.RaftAddr }

// Run replays the server's snapshot and log into a fresh ledger and
// rewrites its data as a one-server cluster (cluster.Recover). Every agent
// of the cluster must be stopped.
func (p RecoveryPlan) Run() (Recovery, error) {
	f, err := fsm.New(p.fsm)
	if err != nil {
		return Recovery{}, fmt.Errorf("recover: %w", err)
	}
	info, err := cluster.Recover(p.cluster, f)
	if err != nil {
		return Recovery{}, err
	}
	st := f.Stats()
	return Recovery{RecoverInfo: info, Resources: len(st.Resources), HoldsOutstanding: st.HoldsOutstanding}, nil
}
