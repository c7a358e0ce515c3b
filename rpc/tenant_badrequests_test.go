package rpc_test

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

const tnt = "/ledgerd.v1.TenantService/"

// tenantBadCases are the bad requests of TenantService.
func tenantBadCases(ops, acme string) []badCase {
	lim := func(f func(l *ledgerdv1.Limits)) *ledgerdv1.SetLimitsRequest {
		l := &ledgerdv1.Limits{MaxUnits: 4}
		f(l)
		return &ledgerdv1.SetLimitsRequest{Tenant: "acme", Resource: "cpu", Limits: l}
	}
	set := func(name string, m *ledgerdv1.SetLimitsRequest, field string) badCase {
		return call[ledgerdv1.SetLimitsRequest, ledgerdv1.SetLimitsResponse]("SetLimits/"+name, tnt+"SetLimits", ops, m, field)
	}
	return []badCase{
		set("no tenant", &ledgerdv1.SetLimitsRequest{Resource: "cpu"}, "tenant"),
		set("long tenant", &ledgerdv1.SetLimitsRequest{Tenant: string(make([]byte, 300)), Resource: "cpu"}, "tenant"),
		set("bad resource", &ledgerdv1.SetLimitsRequest{Tenant: "acme", Resource: "a b"}, "resource"),
		set("no resource", &ledgerdv1.SetLimitsRequest{Tenant: "acme"}, "resource"),
		set("negative units", lim(func(l *ledgerdv1.Limits) { l.MaxUnits = -1 }), "limits.max_units"),
		set("negative unit-hours", lim(func(l *ledgerdv1.Limits) { l.MaxUnitHours, l.Window = -5, durationpb.New(time.Hour) }), "limits.max_unit_hours"),
		set("huge unit-hours", lim(func(l *ledgerdv1.Limits) { l.MaxUnitHours, l.Window = 1<<62, durationpb.New(time.Hour) }), "limits.max_unit_hours"),
		set("unit-hours without window", lim(func(l *ledgerdv1.Limits) { l.MaxUnitHours = 5 }), "limits.window"),
		set("window without unit-hours", lim(func(l *ledgerdv1.Limits) { l.Window = durationpb.New(time.Hour) }), "limits.window"),
		set("window over 100 years", lim(func(l *ledgerdv1.Limits) {
			l.MaxUnitHours, l.Window = 5, durationpb.New(101*365*24*time.Hour)
		}), "limits.window"),
		set("zero duration", lim(func(l *ledgerdv1.Limits) { l.MaxDuration = durationpb.New(0) }), "limits.max_duration"),
		set("negative horizon", lim(func(l *ledgerdv1.Limits) { l.MaxAhead = durationpb.New(-time.Second) }), "limits.max_ahead"),
		set("invalid duration", lim(func(l *ledgerdv1.Limits) { l.ApprovalTtl = &durationpb.Duration{Seconds: 1, Nanos: -1} }), "limits.approval_ttl"),
		set("negative approval units", lim(func(l *ledgerdv1.Limits) { l.ApprovalAboveUnits = -2 }), "limits.approval_above_units"),
		call[ledgerdv1.DenyRequest, ledgerdv1.DenyResponse]("Deny/no reason", tnt+"Deny", ops, &ledgerdv1.DenyRequest{Id: "some-id"}, "reason"),
		call[ledgerdv1.DenyRequest, ledgerdv1.DenyResponse]("Deny/no id", tnt+"Deny", ops, &ledgerdv1.DenyRequest{Reason: "no"}, "id"),
		call[ledgerdv1.DenyRequest, ledgerdv1.DenyResponse]("Deny/long reason", tnt+"Deny", ops, &ledgerdv1.DenyRequest{Id: "some-id", Reason: string(make([]byte, 2000))}, "reason"),
		call[ledgerdv1.ApproveRequest, ledgerdv1.ApproveResponse]("Approve/bad id", tnt+"Approve", ops, &ledgerdv1.ApproveRequest{Id: "a b"}, "id"),
		call[ledgerdv1.UsageRequest, ledgerdv1.UsageResponse]("Usage/to before from", tnt+"Usage", acme, &ledgerdv1.UsageRequest{
			From: timestamppb.New(time.Date(2030, 1, 1, 2, 0, 0, 0, time.UTC)), To: timestamppb.New(time.Date(2030, 1, 1, 1, 0, 0, 0, time.UTC))}, "to"),
		call[ledgerdv1.GetLimitsRequest, ledgerdv1.GetLimitsResponse]("GetLimits/resource without tenant", tnt+"GetLimits", ops, &ledgerdv1.GetLimitsRequest{Resource: "cpu"}, "resource"),
	}
}
