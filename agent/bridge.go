package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/ledgerd/ledgerd/bridge"
	"github.com/ledgerd/ledgerd/bridge/follow"
	"github.com/ledgerd/ledgerd/bridge/slurm"
)

// SlurmBridgeConfig is the slurm_bridge key of the configuration: the
// agent role that makes a Slurm controller's reservations follow the
// ledger (bridge/DESIGN.md). Every server may carry it; only the leader's
// bridge acts, so exactly one writes at a time.
type SlurmBridgeConfig struct {
	// Resource is the ledger resource with units that Partition backs
	// (its units are the partition's node names).
	Resource string `json:"resource"`
	// Partition, if set, is the Slurm partition whose unusable nodes
	// (DOWN, DRAIN, FAIL, not responding) become unit down windows.
	Partition string `json:"partition"`
	// Prefix marks the reservations the bridge owns; default "ledgerd-".
	Prefix string `json:"prefix"`
	// Horizon: reservations that start later are written once they come
	// within it; default 7 days.
	Horizon Duration `json:"horizon"`
	// Interval between rounds; default 10 s.
	Interval Duration `json:"interval"`
	// TenantMap maps ledger tenants to Slurm users and accounts; "*" is
	// every other tenant. A tenant without a mapping is not materialized.
	TenantMap map[string]follow.Tenant `json:"tenant_map"`
	// SlurmConf is slurm.conf's path, when not the default.
	SlurmConf string `json:"slurm_conf"`
	// Zone is the controller's time zone (a zone database name); default UTC.
	Zone string `json:"zone"`
	// User is the account scontrol runs as when the agent runs as root
	// (SlurmUser, e.g. "slurm"); empty runs it as the agent's user.
	User string `json:"user"`
	// Scontrol and Sinfo are the commands' paths; default from $PATH.
	Scontrol string `json:"scontrol"`
	Sinfo    string `json:"sinfo"`
}

// followConfig is the follower's configuration.
func (b *SlurmBridgeConfig) followConfig() follow.Config {
	prefix := b.Prefix
	if prefix == "" {
		prefix = "ledgerd-"
	}
	return follow.Config{Resource: b.Resource, Partition: b.Partition, Prefix: prefix, Horizon: time.Duration(b.Horizon),
		Interval: time.Duration(b.Interval), Tenants: b.TenantMap}
}

// validate checks the slurm_bridge key; errors name the key.
func (b *SlurmBridgeConfig) validate() error {
	if b == nil {
		return nil
	}
	fc := b.followConfig()
	if err := fc.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if b.Zone != "" {
		if _, err := time.LoadLocation(b.Zone); err != nil || b.Zone == "Local" {
			return fmt.Errorf("config: slurm_bridge.zone: %q is not a zone database name (e.g. Europe/Berlin)", b.Zone)
		}
	}
	return nil
}

// driver builds the Slurm driver of the configuration.
func (b *SlurmBridgeConfig) driver(onRetry func(string, int, error)) (*slurm.Driver, error) {
	zone := time.UTC
	if b.Zone != "" {
		z, err := time.LoadLocation(b.Zone)
		if err != nil {
			return nil, fmt.Errorf("slurm_bridge.zone: %w", err)
		}
		zone = z
	}
	var env []string
	if b.SlurmConf != "" {
		env = append(env, "SLURM_CONF="+b.SlurmConf)
	}
	d, err := slurm.New(slurm.Config{Prefix: b.followConfig().Prefix, Env: env, Zone: zone, User: b.User,
		Scontrol: b.Scontrol, Sinfo: b.Sinfo, OnRetry: onRetry})
	if err != nil {
		return nil, fmt.Errorf("slurm_bridge: %w", err)
	}
	return d, nil
}

// bridgeRole is the running bridge role of an agent.
type bridgeRole struct {
	f      *follow.Follower
	cancel context.CancelFunc
	done   chan struct{}
}

// createBridge builds the bridge role when the configuration asks for one
// (Options.BridgeDriver replaces the Slurm driver in tests).
func (a *Agent) createBridge() error {
	bc := a.cfg.SlurmBridge
	if bc == nil {
		return nil
	}
	m := follow.NewMetrics(a.reg, nil)
	var d bridge.Driver = a.opts.BridgeDriver
	if d == nil {
		sd, err := bc.driver(m.Retry)
		if err != nil {
			return err
		}
		d = sd
	}
	f, err := follow.New(bc.followConfig(), a.ledger, d, nil, a.log.With("role", "slurm-bridge"), m)
	if err != nil {
		return fmt.Errorf("slurm_bridge: %w", err)
	}
	a.bridge = &bridgeRole{f: f}
	return nil
}

// startBridge runs the bridge's rounds; they act only while this server
// leads.
func (a *Agent) startBridge() {
	b := a.bridge
	if b == nil || b.done != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel, b.done = cancel, make(chan struct{})
	node := a.node
	go func() {
		defer close(b.done)
		b.f.Run(ctx, func() bool { return node != nil && node.IsLeader() })
	}()
	a.log.Info("slurm bridge role started; it acts while this server leads", "resource", a.cfg.SlurmBridge.Resource)
}

// stopBridge ends the bridge's rounds and waits (bounded) for the one in
// flight, whose commands end with its context.
func (a *Agent) stopBridge() {
	b := a.bridge
	if b == nil || b.done == nil {
		return
	}
	b.cancel()
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		a.log.Error("slurm bridge round did not end within 10 s of shutdown")
	}
	b.done = nil
}

// Bridge returns the bridge role's follower, nil without slurm_bridge.
func (a *Agent) Bridge() *follow.Follower {
	if a.bridge == nil {
		return nil
	}
	return a.bridge.f
}
