package rpc_test

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc"
)

// unitBadCases are the bad requests of resources with units: hostlists,
// unit lists, unit policies, amounts beyond the units, and unit down
// windows. TestBadRequests creates the resource "rack" with units
// r1..r4 before it sends them.
func unitBadCases(now time.Time) []badCase {
	at := func(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(now.Add(d)) }
	acme, ops := agenttest.TokenAcme, agenttest.TokenOps
	create := func(nodes string, f func(r *ledgerdv1.Resource)) *ledgerdv1.CreateRequest {
		r := &ledgerdv1.Resource{Name: "newnodes"}
		if f != nil {
			f(r)
		}
		return &ledgerdv1.CreateRequest{Resource: r, Nodes: nodes}
	}
	tooMany := make([]string, rpc.MaxUnits+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("n%d", i)
	}
	c := func(name string, m *ledgerdv1.CreateRequest, field string) badCase {
		return call[ledgerdv1.CreateRequest, ledgerdv1.CreateResponse]("Create/"+name, rsc+"Create", ops, m, field)
	}
	down := func(name string, m *ledgerdv1.UnitDownRequest, field string) badCase {
		return call[ledgerdv1.UnitDownRequest, ledgerdv1.UnitDownResponse]("UnitDown/"+name, rsc+"UnitDown", ops, m, field)
	}
	return []badCase{
		c("hostlist without ]", create("n[1-", nil), "nodes"),
		c("hostlist backwards", create("n[5-1]", nil), "nodes"),
		c("hostlist with a space", create("n1 n2", nil), "nodes"),
		c("hostlist empty name", create("n1,,n2", nil), "nodes"),
		c("hostlist 65537 units", create("n[1-65537]", nil), "nodes"),
		c("hostlist duplicate names", create("n[1-3],n2", nil), "nodes"),
		c("hostlist and units", create("n[1-2]", func(r *ledgerdv1.Resource) { r.Units = []string{"a"} }), "nodes"),
		c("units duplicate names", create("", func(r *ledgerdv1.Resource) { r.Units = []string{"a", "b", "a"} }), "resource.units[2]"),
		c("units 65537", create("", func(r *ledgerdv1.Resource) { r.Units = tooMany }), "resource.units"),
		c("unit name with a space", create("", func(r *ledgerdv1.Resource) { r.Units = []string{"a b"} }), "resource.units[0]"),
		c("unit name 65 bytes", create("n[1-2]x01234567890123456789012345678901234567890123456789012345678901", nil), "resource.units[0]"),
		c("capacity beside units", create("n[1-4]", func(r *ledgerdv1.Resource) { r.Capacity = 5 }), "resource.capacity"),
		c("unknown unit policy", create("n[1-4]", func(r *ledgerdv1.Resource) { r.UnitPolicy = 9 }), "resource.unit_policy"),
		c("units with RELAXED", create("n[1-4]", func(r *ledgerdv1.Resource) { r.Policy = ledgerdv1.Policy_POLICY_RELAXED }), "resource.policy"),
		call[ledgerdv1.HoldRequest, ledgerdv1.HoldResponse]("Hold/more than the units", rsv+"Hold", acme, &ledgerdv1.HoldRequest{Shape: &ledgerdv1.Shape{
			Parts: []*ledgerdv1.ResourceAmount{{Resource: "rack", Amount: 5}}, Duration: durationpb.New(time.Hour), NotBefore: at(time.Hour)}}, "shape.parts[0].amount"),
		call[ledgerdv1.ReserveRequest, ledgerdv1.ReserveResponse]("Reserve/more than the units", rsv+"Reserve", acme, &ledgerdv1.ReserveRequest{Shape: &ledgerdv1.Shape{
			Parts: []*ledgerdv1.ResourceAmount{{Resource: "cpu", Amount: 1}, {Resource: "rack", Amount: 9}}, Duration: durationpb.New(time.Hour), NotBefore: at(time.Hour)}}, "shape.parts[1].amount"),
		down("no to", &ledgerdv1.UnitDownRequest{Name: "rack", Unit: "r1"}, "to"),
		down("to before from", &ledgerdv1.UnitDownRequest{Name: "rack", Unit: "r1", From: at(time.Hour), To: at(time.Minute)}, "to"),
		down("bad from", &ledgerdv1.UnitDownRequest{Name: "rack", Unit: "r1", From: &timestamppb.Timestamp{Nanos: -1}, To: at(time.Hour)}, "from"),
		down("to past 9999", &ledgerdv1.UnitDownRequest{Name: "rack", Unit: "r1", To: &timestamppb.Timestamp{Seconds: 253402300800}}, "to"),
		down("no name", &ledgerdv1.UnitDownRequest{Unit: "r1", To: at(time.Hour)}, "name"),
		down("no unit", &ledgerdv1.UnitDownRequest{Name: "rack", To: at(time.Hour)}, "unit"),
		down("unknown unit", &ledgerdv1.UnitDownRequest{Name: "rack", Unit: "r9", To: at(time.Hour)}, "unit"),
		down("resource without units", &ledgerdv1.UnitDownRequest{Name: "cpu", Unit: "r1", To: at(time.Hour)}, "name"),
		down("id with a space", &ledgerdv1.UnitDownRequest{Name: "rack", Unit: "r1", To: at(time.Hour), Id: "a b"}, "id"),
		down("reserved id prefix", &ledgerdv1.UnitDownRequest{Name: "rack", Unit: "r1", To: at(time.Hour), Id: "down-1"}, "id"),
		call[ledgerdv1.UnitUpRequest, ledgerdv1.UnitUpResponse]("UnitUp/no id", rsc+"UnitUp", ops, &ledgerdv1.UnitUpRequest{Name: "rack"}, "id"),
		call[ledgerdv1.UnitUpRequest, ledgerdv1.UnitUpResponse]("UnitUp/no name", rsc+"UnitUp", ops, &ledgerdv1.UnitUpRequest{Id: "x"}, "name"),
	}
}
