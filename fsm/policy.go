package fsm

import (
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// Admission policies and variable jobs (issue #7). The commands are part of
// the log format from envelope version 2 on; their apply logic follows.

// checkPolicySpec validates a policy given with a command.
func checkPolicySpec(field string, p *fsmv1.PolicySpec) *fsmv1.Result {
	switch p.GetPolicy() {
	case fsmv1.AdmissionPolicy_ADMISSION_POLICY_UNSPECIFIED, fsmv1.AdmissionPolicy_ADMISSION_POLICY_REJECT:
		return nil
	}
	return invalid(field+".policy", "only REJECT is implemented in this release so far")
}

func (s *state) setPolicy(*fsmv1.SetPolicy) *fsmv1.Result {
	return invalid("set_policy", "not implemented in this release so far")
}

func (s *state) submitJob(*fsmv1.Command) *fsmv1.Result {
	return invalid("submit_job", "not implemented in this release so far")
}
