package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ledgerd/ledgerd/ledger"
	"github.com/ledgerd/ledgerd/ledger/replicated"
)

// TenantLimitConfig is one entry of the tenant_limits config key: the
// limits of one tenant ("*": every tenant without its own entry) on one
// resource ("*": every resource without its own). Durations are Go
// durations or whole days ("30d").
type TenantLimitConfig struct {
	Tenant                string `json:"tenant"`
	Resource              string `json:"resource"`
	MaxUnits              int64  `json:"max_units"`
	MaxUnitHours          int64  `json:"max_unit_hours"`
	Window                string `json:"window"`
	MaxAhead              string `json:"max_ahead"`
	MaxDuration           string `json:"max_duration"`
	MaxHoldTTL            string `json:"max_hold_ttl"`
	Approval              string `json:"approval"`
	ApprovalAboveUnits    int64  `json:"approval_above_units"`
	ApprovalAboveDuration string `json:"approval_above_duration"`
	ApprovalTTL           string `json:"approval_ttl"`
}

// spec converts the entry, naming the key at fault. The ledger checks
// the rest (names, ranges) when the entry is proposed.
func (t TenantLimitConfig) spec() (*ledger.LimitSpec, error) {
	sp := &ledger.LimitSpec{MaxUnits: t.MaxUnits, ApprovalAboveUnits: t.ApprovalAboveUnits}
	if t.Tenant == "" || t.Resource == "" {
		return nil, errors.New("tenant and resource are required (\"*\" for every one)")
	}
	if t.MaxUnitHours < 0 || t.MaxUnitHours > (1<<63-1)/3_600_000 {
		return nil, fmt.Errorf("max_unit_hours %d out of range", t.MaxUnitHours)
	}
	sp.MaxUnitMillis = t.MaxUnitHours * 3_600_000
	switch t.Approval {
	case "", "none":
	case "required":
		sp.ApprovalRequired = true
	default:
		return nil, fmt.Errorf("approval: want \"required\" or \"none\", got %q", t.Approval)
	}
	for _, d := range []struct {
		key, v string
		out    *int64
	}{
		{"window", t.Window, &sp.Window}, {"max_ahead", t.MaxAhead, &sp.MaxAhead}, {"max_duration", t.MaxDuration, &sp.MaxDuration},
		{"max_hold_ttl", t.MaxHoldTTL, &sp.MaxHoldTTL}, {"approval_above_duration", t.ApprovalAboveDuration, &sp.ApprovalAboveDuration},
		{"approval_ttl", t.ApprovalTTL, &sp.ApprovalTTL},
	} {
		if d.v == "" {
			continue
		}
		ms, err := dayDuration(d.v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("%s: want a positive duration such as \"12h\" or \"30d\", got %q", d.key, d.v)
		}
		*d.out = ms
	}
	return sp, nil
}

// dayDuration parses a Go duration or whole days ("30d") into ms.
func dayDuration(s string) (int64, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.ParseInt(n, 10, 64)
		if err != nil || days > 1<<40 {
			return 0, fmt.Errorf("bad days %q", s)
		}
		return days * 24 * 3_600_000, nil
	}
	d, err := time.ParseDuration(s)
	return d.Milliseconds(), err
}

// limitKeyNames turns the state machine's public names of a SetLimits'
// fields (limits.window) into the keys of a tenant_limits entry (window).
var limitKeyNames = strings.NewReplacer("invalid limits.", "invalid ", "max_unit_millis and window_millis", "max_unit_hours and window")

// checkTenantLimits validates the tenant_limits key.
func (c *Config) checkTenantLimits() error {
	seen := map[[2]string]bool{}
	for i, t := range c.TenantLimits {
		sp, err := t.spec()
		if err != nil {
			return fmt.Errorf("config: tenant_limits[%d]: %w", i, err)
		}
		// What the state machine will check when the entry is seeded,
		// with its field names turned into this key's.
		if err := replicated.CheckLimits(t.Tenant, t.Resource, sp); err != nil {
			return fmt.Errorf("config: tenant_limits[%d]: %s", i, limitKeyNames.Replace(err.Error()))
		}
		k := [2]string{t.Tenant, t.Resource}
		if seen[k] {
			return fmt.Errorf("config: tenant_limits[%d]: %s/%s given twice", i, t.Tenant, t.Resource)
		}
		seen[k] = true
	}
	return nil
}

// seedLimits proposes the configured tenant limits through the logged
// SetLimits command, so the limit table stays replicated state with one
// source: it runs only on a server that started without Raft state (a
// new cluster), and only while the table is still empty once the
// cluster has a leader. Every such server of the new cluster proposes
// the same entries under the same idempotency keys, so they are set
// once. Later changes are `ledgerd tenant limits set`; editing the key
// afterwards changes nothing.
func (a *Agent) seedLimits(ctx context.Context) {
	if len(a.cfg.TenantLimits) == 0 || a.node.HadState() {
		return
	}
	go func() {
		if err := a.waitReady(ctx); err != nil {
			a.log.Warn("tenant_limits not seeded", "err", err)
			return
		}
		if len(a.fsm.Limits()) > 0 {
			a.log.Info("tenant_limits not seeded: the cluster has limits already")
			return
		}
		for _, t := range a.cfg.TenantLimits {
			sp, _ := t.spec() // checked by Validate
			w := ledger.Write{Tenant: "config", Operator: true, IdempotencyKey: "config-limits/" + t.Tenant + "/" + t.Resource}
			for attempt := 0; ; attempt++ {
				_, err := a.ledger.SetLimits(ctx, ledger.LimitsArgs{Write: w, Tenant: t.Tenant, Resource: t.Resource, Spec: sp})
				if err == nil {
					a.log.Info("tenant limits seeded from config", "tenant", t.Tenant, "resource", t.Resource)
					break
				}
				if !errors.Is(err, ledger.ErrUnavailable) && !errors.Is(err, ledger.ErrOutcomeUnknown) || attempt == 20 {
					a.log.Error("tenant_limits: seeding failed", "tenant", t.Tenant, "resource", t.Resource, "err", err)
					break
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(500 * time.Millisecond):
				}
			}
		}
	}()
}
