package cluster

import (
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/hashicorp/memberlist"
)

// withDefaults validates c and returns a copy with defaults filled in.
// Errors name the offending field.
func (c Config) withDefaults() (Config, error) {
	if c.DataDir == "" {
		return c, fmt.Errorf("cluster: Config.DataDir is required")
	}
	if c.RaftBind == "" {
		return c, fmt.Errorf("cluster: Config.RaftBind is required")
	}
	if c.GossipBind == "" {
		return c, fmt.Errorf("cluster: Config.GossipBind is required")
	}
	if c.RPCAdvertise == "" {
		return c, fmt.Errorf("cluster: Config.RPCAdvertise is required")
	}
	if _, _, err := splitHostPort("Config.RPCAdvertise", c.RPCAdvertise); err != nil {
		return c, err
	}
	if _, _, err := splitHostPort("Config.RaftBind", c.RaftBind); err != nil {
		return c, err
	}
	if _, _, err := splitHostPort("Config.GossipBind", c.GossipBind); err != nil {
		return c, err
	}
	if c.GossipAdvertise != "" {
		if _, _, err := splitHostPort("Config.GossipAdvertise", c.GossipAdvertise); err != nil {
			return c, err
		}
	}
	for i, j := range c.RetryJoin {
		if _, _, err := splitHostPort(fmt.Sprintf("Config.RetryJoin[%d]", i), j); err != nil {
			return c, err
		}
	}
	if c.BootstrapExpect < 0 {
		return c, fmt.Errorf("cluster: Config.BootstrapExpect must be >= 0, got %d", c.BootstrapExpect)
	}
	if c.Dev && c.BootstrapExpect > 1 {
		return c, fmt.Errorf("cluster: Config.BootstrapExpect must be 0 or 1 with Dev, got %d", c.BootstrapExpect)
	}
	switch len(c.GossipKey) {
	case 0, 16, 24, 32:
	default:
		return c, fmt.Errorf("cluster: Config.GossipKey must be 16, 24 or 32 bytes, got %d", len(c.GossipKey))
	}
	if err := checkLogStoreKind(c.LogStore); err != nil {
		return c, fmt.Errorf("cluster: Config.LogStore: %w", err)
	}
	if err := c.checkMigration(); err != nil {
		return c, err
	}
	for name, d := range map[string]time.Duration{
		"DeadServerGrace": c.DeadServerGrace, "ForwardTimeout": c.ForwardTimeout, "LeaderWait": c.LeaderWait,
		"TickInterval": c.TickInterval, "ReconcileInterval": c.ReconcileInterval,
		"ServerStabilizationTime": c.ServerStabilizationTime,
	} {
		if d < 0 {
			return c, fmt.Errorf("cluster: Config.%s must not be negative, got %s", name, d)
		}
	}
	if c.Group != nil && c.GroupVersion == 0 {
		return c, fmt.Errorf("cluster: Config.GroupVersion is required with Config.Group")
	}
	if c.ReadyLag < 0 {
		return c, fmt.Errorf("cluster: Config.ReadyLag must be >= 0, got %d", c.ReadyLag)
	}
	if c.MinQuorum < 0 {
		return c, fmt.Errorf("cluster: Config.MinQuorum must be >= 0, got %d", c.MinQuorum)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.DeadServerGrace, 30*time.Second)
	def(&c.ForwardTimeout, 10*time.Second)
	def(&c.LeaderWait, 5*time.Second)
	if c.NextDue != nil {
		def(&c.TickInterval, 100*time.Millisecond)
	} else {
		def(&c.TickInterval, time.Second)
	}
	def(&c.ReconcileInterval, 5*time.Second)
	def(&c.ServerStabilizationTime, 5*time.Second)
	if c.ReadyLag == 0 {
		c.ReadyLag = defaultReadyLag
	}
	if c.EnvelopeVersion == 0 {
		c.EnvelopeVersion = 1
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.NodeName == "" {
		c.NodeName, _ = os.Hostname()
	}
	if c.MinQuorum == 0 {
		c.MinQuorum = max(1, c.BootstrapExpect/2+1)
	}
	return c, nil
}

// gossipConfig builds the memberlist configuration for this node.
func (c Config) gossipConfig(id string, g *gossip) (*memberlist.Config, error) {
	mc := memberlist.DefaultLANConfig()
	mc.Name = id
	host, port, err := splitHostPort("Config.GossipBind", c.GossipBind)
	if err != nil {
		return nil, err
	}
	mc.BindAddr, mc.BindPort = host, port
	if c.GossipAdvertise != "" {
		host, port, err := splitHostPort("Config.GossipAdvertise", c.GossipAdvertise)
		if err != nil {
			return nil, err
		}
		mc.AdvertiseAddr, mc.AdvertisePort = host, port
	}
	mc.SecretKey = c.GossipKey
	// Moving to encrypted gossip: accept unencrypted messages until the
	// last stage, and send encrypted ones from MigrationSend on.
	mc.GossipVerifyIncoming = c.Migration == MigrationOff
	mc.GossipVerifyOutgoing = c.Migration != MigrationAccept
	mc.Delegate = g
	mc.Events = g
	mc.Logger = log.New(&levelPrefixWriter{l: c.Logger, component: "memberlist", min: slog.LevelInfo}, "", 0)
	if c.Dev || c.ElectionTimeout > 0 && c.ElectionTimeout < 500*time.Millisecond {
		// Tight timings for one-machine clusters (dev mode, tests).
		mc.ProbeInterval = 250 * time.Millisecond
		mc.ProbeTimeout = 200 * time.Millisecond
		mc.GossipInterval = 50 * time.Millisecond
		mc.SuspicionMult = 3
		mc.PushPullInterval = 2 * time.Second
	}
	return mc, nil
}
