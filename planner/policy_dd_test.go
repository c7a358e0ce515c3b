package planner

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Data-driven tests of the Scheduler: scripts in testdata/policy/ use the
// format of TestDataDriven (command, ----, expected output) and run once
// per exact timeline; both must print the same. Rewrite with
//
//	go test ./planner -run TestPolicyDataDriven -rewrite
//
// Commands (owner= defaults to "u"):
//
//	resource name= cap=                         AddResource
//	policy res= kind=reject|move|relaxed [vstar= pushes=]
//	history n= req= act= [owner=]               n × Releases.Record
//	submit id= res= qty= dur= nb=               Submit
//	reserve id= res= qty= start= dur=           Reserve
//	coreserve id= res=a,b subs=qty@start+dur,... [min=]
//	complete id= at=                            Complete
//	cancel id=                                  Cancel
//	advance now=                                Advance
//	prob res= qty= start= end=                  Probability
//	items res=                                  Items
func TestPolicyDataDriven(t *testing.T) {
	runScriptsPerTimeline(t, "testdata/policy/*.txt", func(_ *testing.T, _ string, f TimelineFactory) func(int, string) string {
		s := NewScheduler(New(f))
		return func(_ int, cmd string) string { return runPolicyCmd(s, cmd) }
	})
}

// runScriptsPerTimeline runs every script that glob matches (the format
// of TestDataDriven) once per exact timeline, list then indexed, each on
// the fresh state that start makes for it (t is the script's subtest): start returns the function
// that runs one command (with its script line) and prints its output.
// Both timelines must print the same; the output must match the script,
// or -rewrite writes it.
func runScriptsPerTimeline(t *testing.T, glob string, start func(t *testing.T, path string, f TimelineFactory) func(line int, cmd string) string) {
	t.Helper()
	paths, err := filepath.Glob(glob)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no scripts match %s", glob)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			ds, trailer := parseScript(t, path)
			var first []string
			for fi, f := range []TimelineFactory{NewList, NewIndexed} {
				run := start(t, path, f)
				for i, d := range ds {
					out := run(d.line, d.cmd)
					if fi == 0 {
						first = append(first, out)
						d.actual = out
					} else if out != first[i] {
						t.Fatalf("%s:%d: timelines disagree:\nlist:    %s\nindexed: %s", path, d.line, first[i], out)
					}
				}
			}
			if *flagRewrite {
				writeScript(t, path, ds, trailer)
				return
			}
			for _, d := range ds {
				if d.actual != d.expected {
					t.Errorf("%s:%d: %s\n got:\n%s\nwant:\n%s", path, d.line, d.cmd, d.actual, d.expected)
				}
			}
		})
	}
}

func runPolicyCmd(s *Scheduler, line string) string {
	fields := strings.Fields(line)
	args := map[string]string{"owner": "u"}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		args[k] = v
	}
	num := func(k string) int64 {
		if args[k] == "max" {
			return MaxTime
		}
		n, err := strconv.ParseInt(args[k], 10, 64)
		if err != nil {
			panic(fmt.Sprintf("%q: bad %s=%q", line, k, args[k]))
		}
		return n
	}
	flt := func(k string) float64 {
		f, err := strconv.ParseFloat(args[k], 64)
		if err != nil {
			panic(fmt.Sprintf("%q: bad %s=%q", line, k, args[k]))
		}
		return f
	}
	errOut := func(err error) string {
		var fe *FieldError
		switch {
		case errors.As(err, &fe):
			return "invalid " + fe.Field
		case errors.Is(err, ErrNoCapacity):
			return "refused"
		}
		return "error: " + err.Error()
	}
	switch fields[0] {
	case "resource":
		if err := s.Planner().AddResource(args["name"], num("cap")); err != nil {
			return errOut(err)
		}
		return "ok"
	case "policy":
		pol := ResourcePolicy{Policy: map[string]Policy{"reject": PolicyReject, "move": PolicyMoveVariable, "relaxed": PolicyRelaxed}[args["kind"]]}
		if _, ok := args["vstar"]; ok {
			pol.MinSuccess = flt("vstar")
		}
		if _, ok := args["pushes"]; ok {
			pol.MaxPushes = int(num("pushes"))
		}
		if err := s.SetPolicy(args["res"], pol); err != nil {
			return errOut(err)
		}
		return "ok"
	case "history":
		for range num("n") {
			s.Releases.Record(args["owner"], num("req"), num("act"))
		}
		return fmt.Sprintf("samples=%d", s.Releases.Samples())
	case "submit":
		st, err := s.Submit(args["id"], args["owner"], Part{args["res"], num("qty")}, num("dur"), num("nb"))
		if err != nil {
			return errOut(err)
		}
		return fmt.Sprintf("planned start=%d", st)
	case "reserve":
		a, err := s.Reserve(args["id"], args["owner"], Part{args["res"], num("qty")}, num("start"), num("dur"))
		if err != nil {
			return errOut(err)
		}
		out := fmt.Sprintf("ok p=%.3f", a.Probability)
		if a.Relaxed {
			out += " relaxed"
		}
		for _, m := range a.Moved {
			out += fmt.Sprintf("\nmoved %s %d->%d", m.ID, m.From, m.To)
		}
		return out
	case "coreserve":
		var subs []SubRequest
		for _, sub := range strings.Split(args["subs"], ",") {
			var q, st, d int64
			if _, err := fmt.Sscanf(sub, "%d@%d+%d", &q, &st, &d); err != nil {
				panic(fmt.Sprintf("%q: bad sub %q", line, sub))
			}
			subs = append(subs, SubRequest{Amount: q, Start: st, Duration: d})
		}
		minJoint := 0.0
		if _, ok := args["min"]; ok {
			minJoint = flt("min")
		}
		a, err := s.CoReserve(args["id"], args["owner"], subs, strings.Split(args["res"], ","), minJoint)
		if err != nil {
			return errOut(err)
		}
		ps := make([]string, len(a.Probability))
		for i, p := range a.Probability {
			ps[i] = fmt.Sprintf("%.3f", p)
		}
		return fmt.Sprintf("mapping=%s p=%s joint=%.3f", strings.Join(a.Mapping, ","), strings.Join(ps, ","), a.Joint)
	case "complete":
		c, err := s.Complete(args["id"], num("at"))
		if err != nil {
			return errOut(err)
		}
		return fmt.Sprintf("requested=%d actual=%d", c.Requested, c.Actual)
	case "cancel":
		if err := s.Cancel(args["id"]); err != nil {
			return errOut(err)
		}
		return "ok"
	case "advance":
		rep := s.Advance(num("now"))
		var lines []string
		if len(rep.Finished) > 0 {
			lines = append(lines, "finished "+strings.Join(rep.Finished, " "))
		}
		if len(rep.Started) > 0 {
			lines = append(lines, "started "+strings.Join(rep.Started, " "))
		}
		for _, v := range rep.Violations {
			l := fmt.Sprintf("violation %s on %s at %d short %d", v.ID, v.Resource, v.At, v.Short)
			if v.Replanned {
				l += " replanned"
			}
			lines = append(lines, l)
		}
		if len(lines) == 0 {
			return "nothing"
		}
		return strings.Join(lines, "\n")
	case "prob":
		return fmt.Sprintf("p=%.3f", s.Probability(args["owner"], args["res"], num("qty"), num("start"), num("end")))
	case "items":
		var lines []string
		for _, it := range s.Items(args["res"]) {
			kind := "res"
			if it.Kind == KindVariable {
				kind = "var"
			}
			l := fmt.Sprintf("%s %s [%d,%d) qty=%d", it.ID, kind, it.Start, it.End, it.Amount)
			if it.Running {
				l += " running"
			}
			if it.Pushes > 0 {
				l += fmt.Sprintf(" pushes=%d", it.Pushes)
			}
			if it.Overbooked > 0 {
				l += fmt.Sprintf(" overbooked=%d", it.Overbooked)
			}
			lines = append(lines, l)
		}
		if len(lines) == 0 {
			return "empty"
		}
		return strings.Join(lines, "\n")
	}
	panic(fmt.Sprintf("unknown command %q", fields[0]))
}
