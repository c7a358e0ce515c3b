package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc/client"
)

func init() {
	// The brief form reads naturally in "ledgerd resource policy set gpu".
	register("resource", "Same as resources", runResources)
}

// Default parameters the ledger uses when a policy leaves them at 0.
const (
	defaultVStarPermille = 800
	defaultMaxPushes     = 8
)

// policyHelp is the usage text shared by the commands taking -policy.
const policyHelp = `Admission policies:
  reject         a reservation that does not fit the free capacity is rejected (default)
  move-variable  a reservation that collides only with planned, not yet started
                 variable jobs (ledgerd job submit) is admitted and those jobs are
                 planned later; a job moved -max-pushes times (default 8) is pinned
  relaxed        a reservation that overlaps others is admitted when the estimated
                 probability that capacity is not short at its start is at least
                 -vstar (default 0.8); the estimate learns from early completions.
                 A shortage at start is a violation: the reservation runs DEGRADED.
`

// policyFlags are the flags describing an admission policy.
type policyFlags struct {
	policy    string
	vstar     string
	maxPushes uint
}

func (pf *policyFlags) register(fs *flag.FlagSet, def string) {
	fs.StringVar(&pf.policy, "policy", def, "admission policy: reject, move-variable or relaxed")
	fs.StringVar(&pf.vstar, "vstar", "", "relaxed: least success probability v* in (0, 1], at most 3 decimals (default 0.8)")
	fs.UintVar(&pf.maxPushes, "max-pushes", 0, "move-variable: times a job may be moved later before it is pinned (default 8)")
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprint(fs.Output(), "\n"+policyHelp)
	}
}

// spec returns the policy and its parameters (0 selects the ledger's
// default).
func (pf *policyFlags) spec() (p ledgerdv1.Policy, vstar, maxPushes uint32, err error) {
	p, err = parsePolicy(pf.policy)
	if err != nil {
		return 0, 0, 0, err
	}
	if pf.vstar != "" {
		if p != ledgerdv1.Policy_POLICY_RELAXED {
			return 0, 0, 0, errors.New("-vstar applies to -policy relaxed only")
		}
		if vstar, err = parsePermille(pf.vstar); err != nil {
			return 0, 0, 0, fmt.Errorf("-vstar: %w", err)
		}
	}
	if pf.maxPushes != 0 {
		if p != ledgerdv1.Policy_POLICY_MOVE_VARIABLE {
			return 0, 0, 0, errors.New("-max-pushes applies to -policy move-variable only")
		}
		if pf.maxPushes > math.MaxUint32 {
			return 0, 0, 0, errors.New("-max-pushes is too large")
		}
		maxPushes = uint32(pf.maxPushes)
	}
	return p, vstar, maxPushes, nil
}

// parsePolicy reads reject, move-variable or relaxed.
func parsePolicy(s string) (ledgerdv1.Policy, error) {
	name := strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(s), "-", "_"))
	v, ok := ledgerdv1.Policy_value["POLICY_"+name]
	if !ok || v == 0 {
		return 0, fmt.Errorf("-policy: unknown policy %q (reject, move-variable, relaxed)", s)
	}
	return ledgerdv1.Policy(v), nil
}

// parsePermille reads a probability in (0, 1] with at most three decimals
// ("0.8", "0.95", "1") as permille.
func parsePermille(s string) (uint32, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if !(f > 0 && f <= 1) {
		return 0, fmt.Errorf("%s must lie in (0, 1]", s)
	}
	pm := math.Round(f * 1000)
	if math.Abs(pm-f*1000) > 1e-6 {
		return 0, fmt.Errorf("%s has more than three decimals", s)
	}
	return uint32(pm), nil
}

// policyString describes a resource's policy with its effective
// parameters, e.g. "relaxed v*=0.800".
func policyString(r *ledgerdv1.Resource) string {
	switch r.Policy {
	case ledgerdv1.Policy_POLICY_MOVE_VARIABLE:
		n := r.MaxPushes
		if n == 0 {
			n = defaultMaxPushes
		}
		return fmt.Sprintf("move-variable max-pushes=%d", n)
	case ledgerdv1.Policy_POLICY_RELAXED:
		v := r.MinSuccessPermille
		if v == 0 {
			v = defaultVStarPermille
		}
		return "relaxed v*=" + permilleString(v)
	}
	return "reject"
}

// permilleString prints permille as a probability with three decimals.
func permilleString(pm uint32) string { return fmt.Sprintf("%d.%03d", pm/1000, pm%1000) }

// kindName is the short name of a reservation's kind.
func kindName(k ledgerdv1.ReservationKind) string {
	if k == ledgerdv1.ReservationKind_RESERVATION_KIND_VARIABLE_JOB {
		return "job"
	}
	return "reservation"
}

// admissionNote says how a reservation was scheduled, or "-" for a plain
// booking: a job's bound and moves, a relaxed admission's probability, a
// violation's shortfall.
func admissionNote(r *ledgerdv1.Reservation) string {
	var notes []string
	if r.Kind == ledgerdv1.ReservationKind_RESERVATION_KIND_VARIABLE_JOB {
		notes = append(notes, "not before "+fmtTime(r.NotBefore))
		if r.Pushes > 0 {
			notes = append(notes, fmt.Sprintf("moved later %dx", r.Pushes))
		}
	}
	if r.Relaxed {
		notes = append(notes, "relaxed p="+permilleString(r.ProbabilityPermille))
	}
	if r.ShortUnits > 0 {
		notes = append(notes, fmt.Sprintf("short %d units", r.ShortUnits))
	}
	notes = append(notes, approvalNotes(r)...)
	if len(notes) == 0 {
		return "-"
	}
	return strings.Join(notes, "; ")
}

// resourcesPolicy runs "resources policy set NAME -policy ...".
func resourcesPolicy(args []string) int {
	if len(args) == 0 || args[0] != "set" {
		fmt.Fprintln(cliErr, "Usage: ledgerd resources policy set NAME -policy reject|move-variable|relaxed [-vstar P] [-max-pushes N]")
		return exitUsage
	}
	name, args := splitName(args[1:])
	fs, cf := newFlagSet("resources policy set", "NAME")
	var pf policyFlags
	pf.register(fs, "")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if name = nameArg(fs, name); name == "" {
		return usageErr(fs, "want a resource name")
	}
	if pf.policy == "" {
		return usageErr(fs, "-policy is required")
	}
	p, vstar, maxPushes, err := pf.spec()
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	return cf.withClient("resources policy set", func(ctx context.Context, c *client.Client) error {
		r, err := c.SetPolicy(ctx, &ledgerdv1.SetPolicyRequest{Name: name, Policy: p, MinSuccessPermille: vstar, MaxPushes: maxPushes})
		if err == nil {
			printResources(cf.json, r)
		}
		return err
	})
}

// printMoved reports the variable jobs a booking moved later: one line
// each after the booking, or one JSON object each.
func printMoved(asJSON bool, moved []*ledgerdv1.MovedJob) {
	for _, m := range moved {
		if asJSON {
			printJSON(m)
			continue
		}
		fmt.Fprintf(cliOut, "moved job %s: %s -> %s\n", m.Id, fmtTime(m.From), fmtTime(m.To))
	}
}
