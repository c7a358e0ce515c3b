package jepsen

import (
	"strings"
	"testing"
)

const msNs = int64(1_000_000)

// TestFaultAvailabilities pins the per-fault measures on a hand-made run:
// the leader n1 is paused at 1000 ms; n2 names the new leader n3 at
// 2500 ms, n3 itself at 2400 ms; writes through n2 and n3 come back at
// 3000 and 2600 ms; the next fault starts at 20000 ms.
func TestFaultAvailabilities(t *testing.T) {
	faults := []Fault{
		{Kind: "pause-leader", Targets: []string{"n1"}, Start: 1000 * msNs, End: 11000 * msNs},
		{Kind: "kill", Targets: []string{"n2"}, Start: 20000 * msNs, End: 25000 * msNs},
	}
	leaders := []LeaderSample{
		{At: 0, Node: "n1", Leader: "n1"}, {At: 0, Node: "n2", Leader: "n1"}, {At: 0, Node: "n3", Leader: "n1"},
		{At: 1800 * msNs, Node: "n2", Leader: ""},
		{At: 2400 * msNs, Node: "n3", Leader: "n3"},
		{At: 2500 * msNs, Node: "n2", Leader: "n3"},
	}
	w := func(node string, call, ret int64, code Code, reason string) Op {
		return Op{Node: node, Input: Input{Op: OpReserve}, Output: Output{Code: code}, Call: call * msNs, Return: ret * msNs, Reason: reason}
	}
	h := History{Ops: []Op{
		w("n2", 900, 1100, CodeOK, ""), // before the fault: not a first ack
		w("n2", 1000, 4000, CodeUnknown, ReasonOutcomeUnknown),
		w("n3", 1200, 2600, CodeOK, ""),
		w("n2", 2000, 3000, CodeRejected, ""), // a definite answer is an acknowledgement
		w("n1", 1000, 11000, CodeUnknown, ""), // the paused node itself
		{Node: "n3", Input: Input{Op: OpGet}, Output: Output{Code: CodeOK}, Call: 1100 * msNs, Return: 1200 * msNs}, // a read
		w("n1", 21000, 21010, CodeOK, ""),
	}}
	probes := []ProbeOp{{Node: "n2", Call: 1000 * msNs, Return: 13000 * msNs, Reason: ReasonOutcomeUnknown, Indeterminate: true, Burst: true}}
	got := FaultAvailabilities(faults, []string{"n1", "n2", "n3"}, h, probes, leaders, 30000*msNs)
	if len(got) != 2 {
		t.Fatalf("%d faults measured, want 2", len(got))
	}
	p := got[0]
	if p.ElectionMs != 1400 {
		t.Errorf("election %v ms, want 1400 (n3 names itself at 2400)", p.ElectionMs)
	}
	if p.FirstAckMs["n2"] != 2000 || p.FirstAckMs["n3"] != 1600 || len(p.FirstAckMs) != 2 {
		t.Errorf("first acks %v, want n2 2000, n3 1600 and no entry for the target n1", p.FirstAckMs)
	}
	if p.RecoveryMs != 2000 {
		t.Errorf("recovery %v ms, want 2000", p.RecoveryMs)
	}
	if p.Writes != 5 || p.OutcomeUnknown != 2 || p.Indeterminate != 3 {
		t.Errorf("writes %d, unknown %d, indeterminate %d; want 5, 2, 3", p.Writes, p.OutcomeUnknown, p.Indeterminate)
	}
	if p.WriteMaxMs != 12000 || len(p.Burst) != 1 || p.Burst[0].OK {
		t.Errorf("write max %v, burst %+v; want 12000 and one failed burst write", p.WriteMaxMs, p.Burst)
	}
	k := got[1]
	if k.ElectionMs != 0 {
		t.Errorf("kill of a follower: election %v, want 0 (the leader n3 was not a target)", k.ElectionMs)
	}
	if k.FirstAckMs["n3"] != -1 || k.RecoveryMs != -1 {
		t.Errorf("kill: first acks %v, recovery %v; want n3 -1 (no write through it) and recovery -1", k.FirstAckMs, k.RecoveryMs)
	}

	nas := SummarizeNemeses(got)
	if len(nas) != 2 || nas[0].Kind != "kill" || nas[1].Kind != "pause-leader" {
		t.Fatalf("per nemesis %+v, want kill then pause-leader", nas)
	}
	pl := nas[1]
	// Recovery 2000 ms <= election 1400 ms + 1 s.
	if pl.WithinElectionPlus1s != 1 || pl.Slack.Max != 600 || pl.Unmeasured != 0 || pl.BurstWrites != 1 || pl.BurstOK != 0 {
		t.Errorf("pause-leader summary %+v: want slack 600 ms, within election + 1 s, one failed burst write", pl)
	}
	if nas[0].Unmeasured != 1 {
		t.Errorf("kill summary %+v, want 1 unmeasured", nas[0])
	}
	if txt := AvailabilityText(nas); !strings.Contains(txt, "pause-leader") || !strings.Contains(txt, "burst 0/1 ok") {
		t.Errorf("text misses the nemesis or the burst:\n%s", txt)
	}
}
