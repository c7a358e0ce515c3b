package ledger

import (
	"context"
	"fmt"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// LimitSpec is a tenant's limits on one resource in the ledger's units
// (milliseconds, unit-milliseconds). Zero fields mean no limit.
type LimitSpec struct {
	MaxUnits              int64
	MaxUnitMillis, Window int64
	MaxAhead, MaxDuration int64
	MaxHoldTTL            int64
	ApprovalRequired      bool
	ApprovalAboveUnits    int64
	ApprovalAboveDuration int64
	ApprovalTTL           int64
}

// LimitsArgs are the arguments of Tenancy.SetLimits. Spec nil clears the
// entry.
type LimitsArgs struct {
	Write
	Tenant, Resource string
	Spec             *LimitSpec
}

// UsageQuery selects a usage report: Tenant and Resource filter (empty:
// all), [From, To) is the period of reservation time (To 0: no end).
type UsageQuery struct {
	Tenant, Resource string
	From, To         int64
	Stale            bool
}

// Tenancy is the part of the ledger that keeps per-tenant limits, reports
// usage and decides requests pending approval. The replicated ledger
// implements it; the API serves TenantService only from a Ledger that does.
type Tenancy interface {
	// SetLimits sets or clears one limit entry (operators only).
	SetLimits(ctx context.Context, a LimitsArgs) (*ledgerdv1.TenantLimit, error)
	// Limits returns the entries of tenant (all when empty) and, when
	// tenant and resource are both given, the entry in force for them.
	Limits(ctx context.Context, tenant, resource string, stale bool) ([]*ledgerdv1.TenantLimit, *ledgerdv1.TenantLimit, error)
	// Usage reports unit-time per tenant and resource.
	Usage(ctx context.Context, q UsageQuery) ([]*ledgerdv1.UsageRow, error)
	// Decide approves (approve) or denies a request pending approval
	// (operators only); reason is the denial's reason or the approval's
	// note.
	Decide(ctx context.Context, w Write, id string, approve bool, reason string) (*ledgerdv1.Reservation, error)
}

// ReasonLimitExceeded is the machine-readable reason of a LimitError.
const ReasonLimitExceeded = "LIMIT_EXCEEDED"

// LimitError is a request refused by a tenant limit (the API's
// ResourceExhausted), with the detail the state machine gave.
type LimitError struct {
	Message string
	Detail  *ledgerdv1.LimitExceeded
}

// Error implements error.
func (e *LimitError) Error() string { return fmt.Sprintf("limit exceeded: %s", e.Message) }
