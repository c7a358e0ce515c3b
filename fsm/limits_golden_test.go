package fsm

import (
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/proto"
)

// limitsGoldenCommands are the golden entries of tenant limits and
// approval (envelope version 4), files 50–59. They are applied after
// entries 01–25 (edgeGolden), never after another feature's range, so
// snapshot-v1-limits.golden stays what it was recorded as.
func limitsGoldenCommands() []goldenEntry {
	ops := func(c *fsmv1.Command) *fsmv1.Command { c.Owner, c.Privileged = "ops", true; return c }
	req := func(typ fsmv1.Command_Type, owner, id string, amount, start, dur int64) *fsmv1.Command {
		return &fsmv1.Command{Type: typ, Owner: owner, Payload: &fsmv1.Command_Request{Request: &fsmv1.ReservationRequest{
			Id: id, Parts: []*fsmv1.Part{{Resource: "cluster/cores", Amount: amount}}, DurationMillis: dur, StartMillis: proto.Int64(start)}}}
	}
	decision := func(typ fsmv1.Command_Type, id, reason string) *fsmv1.Command {
		return ops(&fsmv1.Command{Type: typ, Payload: &fsmv1.Command_Decision{Decision: &fsmv1.Decision{Id: id, Reason: reason}}})
	}
	return []goldenEntry{
		{"50_set_limits.bin", 4_000, ops(&fsmv1.Command{Type: fsmv1.Command_TYPE_SET_LIMITS, IdempotencyKey: "l1",
			Payload: &fsmv1.Command_SetLimits{SetLimits: &fsmv1.SetLimits{Tenant: "broker-8", Resource: "cluster/cores", Spec: &fsmv1.LimitSpec{
				MaxUnits: 48, MaxUnitMillis: 48 * 3_600_000, WindowMillis: 86_400_000, MaxDurationMillis: 7_200_000,
				ApprovalAboveUnits: 16, ApprovalTtlMillis: 600_000,
			}}}})},
		// 32 cores is above the approval threshold: PENDING_APPROVAL.
		{"51_reserve_pending.bin", 4_010, req(fsmv1.Command_TYPE_RESERVE, "broker-8", "big-1", 32, 10_000_000, 3_600_000)},
		{"52_approve.bin", 4_020, decision(fsmv1.Command_TYPE_APPROVE, "big-1", "ok for the run")},
		// 32 + 24 > 48 at the same time: refused by max_units.
		{"53_reserve_over_limit.bin", 4_030, req(fsmv1.Command_TYPE_RESERVE, "broker-8", "big-2", 24, 10_000_000, 3_600_000)},
		{"54_hold_pending.bin", 4_040, req(fsmv1.Command_TYPE_HOLD, "broker-8", "big-3", 20, 200_000_000, 3_600_000)},
		{"55_deny.bin", 4_050, decision(fsmv1.Command_TYPE_DENY, "big-3", "not this week")},
		{"56_set_limits_default.bin", 4_060, ops(&fsmv1.Command{Type: fsmv1.Command_TYPE_SET_LIMITS,
			Payload: &fsmv1.Command_SetLimits{SetLimits: &fsmv1.SetLimits{Tenant: "*", Resource: "*", Spec: &fsmv1.LimitSpec{MaxHoldTtlMillis: 10_000}}}})},
		// A TTL above the default entry's max_hold_ttl_millis.
		{"57_hold_ttl_over_limit.bin", 4_070, func() *fsmv1.Command {
			c := req(fsmv1.Command_TYPE_HOLD, "broker-9", "short-1", 1, 30_000_000, 60_000)
			c.GetRequest().HoldTtlMillis = 20_000
			return c
		}()},
	}
}

var limitsGoldenStatuses = []fsmv1.Result_Status{OK, OK, OK, fsmv1.Result_STATUS_LIMIT_EXCEEDED, OK, OK, OK, fsmv1.Result_STATUS_LIMIT_EXCEEDED}

// TestGoldenLimitsSnapshot pins the snapshot after entries 01–25 and the
// limits entries 50–57: the limit table, an approved and a denied
// request.
func TestGoldenLimitsSnapshot(t *testing.T) {
	cmds := append(goldenCommands()[:edgeGolden:edgeGolden], limitsGoldenCommands()...)
	statuses := append(goldenStatuses[:edgeGolden:edgeGolden], limitsGoldenStatuses...)
	g := goldenReplayOf(t, cmds, statuses, "snapshot-v1-limits.golden")
	for id, want := range map[string]fsmv1.Reservation_State{"big-1": COMMITTED, "big-3": fsmv1.Reservation_STATE_DENIED} {
		if r, _ := g.Get(id); r.GetState() != want {
			t.Errorf("%s: %v, want %s", id, r, want)
		}
	}
	if r, _ := g.Get("big-3"); r.GetDecisionReason() != "not this week" || r.GetApprovalReason() == "" {
		t.Errorf("big-3 reasons: %q / %q", r.GetApprovalReason(), r.GetDecisionReason())
	}
	for _, id := range []string{"big-2", "short-1"} {
		if _, ok := g.Get(id); ok {
			t.Errorf("%s was refused but stored", id)
		}
	}
	if ls := g.Limits(); len(ls) != 2 || ls[0].GetTenant() != "*" || ls[1].GetTenant() != "broker-8" {
		t.Errorf("limits after restore: %v", ls)
	}
}
