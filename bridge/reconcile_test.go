package bridge

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const pfx = "lg-"

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func at(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

func spec(id string, nodes string, from, to int) Spec {
	return Spec{Name: pfx + id, Nodes: strings.Split(nodes, ","), Start: at(from), End: at(to), Users: []string{"alice"}}
}

func res(name string, nodes string, from, to int, flags ...string) Reservation {
	return Reservation{Name: name, Nodes: strings.Split(nodes, ","), Start: at(from), End: at(to), Users: []string{"alice"}, Flags: flags}
}

// summary renders a plan compactly for table tests.
func summary(p Plan) string {
	var parts []string
	for _, a := range p.Actions {
		s := string(a.Op) + " " + strings.TrimPrefix(a.Name, pfx)
		if a.Op == OpUpdate {
			s += "(" + joinFields(a.Fields) + ")"
		}
		parts = append(parts, s)
	}
	for _, r := range p.Rejected {
		parts = append(parts, "reject "+strings.TrimPrefix(r.Name, pfx))
	}
	for _, r := range p.Maintenance {
		parts = append(parts, "maint "+r.Name)
	}
	return strings.Join(parts, "; ")
}

func TestReconcileTable(t *testing.T) {
	now := at(0)
	noUsers := spec("9", "n1", 10, 20)
	noUsers.Users = nil
	accounts := spec("1", "n1", 10, 20)
	accounts.Users, accounts.Accounts = nil, []string{"physics"}
	for _, tc := range []struct {
		name     string
		desired  []Spec
		observed []Reservation
		want     string
	}{
		{"nothing", nil, nil, ""},
		{"create the missing", []Spec{spec("1", "n1,n2", 10, 20)}, nil, "create 1"},
		{"converged", []Spec{spec("1", "n2,n1", 10, 20)}, []Reservation{res(pfx+"1", "n1,n2", 10, 20)}, ""},
		{"delete the orphan", nil, []Reservation{res(pfx+"1", "n1", 10, 20)}, "delete 1"},
		{"remap nodes", []Spec{spec("1", "n3", 10, 20)}, []Reservation{res(pfx+"1", "n1", 10, 20)}, "update 1(nodes)"},
		{"shorten (early completion)", []Spec{spec("1", "n1", -10, 5)}, []Reservation{res(pfx+"1", "n1", -10, 20)}, "update 1(end)"},
		{"move a future start", []Spec{spec("1", "n1", 15, 25)}, []Reservation{res(pfx+"1", "n1", 10, 20)}, "update 1(start, end)"},
		{"started late counts as started", []Spec{spec("1", "n1", -10, 20)}, []Reservation{res(pfx+"1", "n1", -2, 20)}, ""},
		{"move an active start: recreate", []Spec{spec("1", "n1", 5, 20)}, []Reservation{res(pfx+"1", "n1", -5, 20)}, "delete 1; create 1"},
		{"users to accounts", []Spec{accounts}, []Reservation{res(pfx+"1", "n1", 10, 20)}, "update 1(users, accounts)"},
		{"over: dropped, deleted", []Spec{spec("1", "n1", -20, -10)}, []Reservation{res(pfx+"1", "n1", -20, 20)}, "delete 1"},
		{"over and gone: nothing", []Spec{spec("1", "n1", -20, 0)}, nil, ""},
		{"no tenant mapping: rejected", []Spec{noUsers}, nil, "reject 9"},
		{"rejected and held: deleted", []Spec{noUsers}, []Reservation{res(pfx+"9", "n1", 10, 20)}, "delete 9; reject 9"},
		{"desired twice", []Spec{spec("1", "n1", 10, 20), spec("1", "n2", 10, 20)}, nil, "reject 1"},
		{"desired overlap: the later start loses", []Spec{spec("2", "n1", 15, 30), spec("1", "n1,n2", 10, 20)}, nil, "create 1; reject 2"},
		{"back to back is no overlap", []Spec{spec("2", "n1", 20, 30), spec("1", "n1", 10, 20)}, nil, "create 1; create 2"},
		{"foreign untouched, even on our nodes later", []Spec{spec("1", "n1", 10, 20)},
			[]Reservation{res("hand", "n1", 30, 40), res("lg", "n1", 0, 5)}, "create 1"},
		{"maintenance reported", nil, []Reservation{res("pm", "n1", 30, 40, "MAINT", "SPEC_NODES")}, "maint pm"},
		{"overlapping foreign: rejected", []Spec{spec("1", "n1", 10, 20)}, []Reservation{res("hand", "n1", 15, 40)}, "reject 1"},
		{"held overlapping foreign unchanged: kept", []Spec{spec("1", "n1", 10, 20)},
			[]Reservation{res("hand", "n1", 15, 40), res(pfx+"1", "n1", 10, 20)}, ""},
		{"held, changed onto foreign: rejected, deleted", []Spec{spec("1", "n1,n2", 10, 20)},
			[]Reservation{res("hand", "n2", 15, 40), res(pfx+"1", "n1", 10, 20)}, "delete 1; reject 1"},
		{"swap nodes: one recreate breaks the cycle", []Spec{spec("a", "n2", 10, 20), spec("b", "n1", 10, 20)},
			[]Reservation{res(pfx+"a", "n1", 10, 20), res(pfx+"b", "n2", 10, 20)}, "delete a; update b(nodes); create a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Reconcile(tc.desired, tc.observed, pfx, now)
			if got := summary(p); got != tc.want {
				t.Fatalf("plan %q, want %q\nrejected: %v", got, tc.want, p.Rejected)
			}
			// Applying it to a manager that holds observed succeeds and
			// converges.
			m := newModel(pfx, now, tc.observed)
			for _, r := range mustApply(t, m, p) {
				if r.Err != nil {
					t.Fatalf("%v: %v\n%s", r.Action, r.Err, m)
				}
			}
			if again := Reconcile(tc.desired, m.list(), pfx, now); !again.Converged() {
				t.Fatalf("second round plans %q", summary(again))
			}
		})
	}
}

func mustApply(t *testing.T, d Driver, p Plan) []Result {
	t.Helper()
	results, err := Apply(context.Background(), d, p.Actions)
	if err != nil {
		t.Fatal(err)
	}
	return results
}

func TestRejectionSaysWhy(t *testing.T) {
	noUsers := spec("1", "n1", 10, 20)
	noUsers.Users = nil
	p := Reconcile([]Spec{noUsers, spec("2", "n1", 30, 40), {Name: "other-3"}}, []Reservation{res("pm", "n1", 35, 50, "MAINT")}, pfx, at(0))
	want := map[string]string{
		pfx + "1": "the tenant has no mapping",
		pfx + "2": "overlaps maintenance reservation pm on node n1",
		"other-3": "not owned by the bridge",
	}
	if len(p.Rejected) != len(want) {
		t.Fatalf("rejected %v, want %d", p.Rejected, len(want))
	}
	for _, r := range p.Rejected {
		if !strings.Contains(r.Reason, want[r.Name]) {
			t.Errorf("%s rejected for %q, want it to say %q", r.Name, r.Reason, want[r.Name])
		}
	}
}

func TestDiffFields(t *testing.T) {
	now := at(0)
	w := spec("1", "n1,n2", 10, 20)
	w.Accounts = []string{"x"}
	h := res(pfx+"1", "n2,n3", 5, 20)
	if got := Diff(w, h, now); !slices.Equal(got, []Field{FieldNodes, FieldStart, FieldAccounts}) {
		t.Fatalf("Diff = %v", got)
	}
	if got := Diff(w, Reservation{Name: w.Name, Nodes: []string{"n2", "n1"}, Start: w.Start, End: w.End, Users: []string{"alice", "alice"}, Accounts: []string{"x"}}, now); len(got) != 0 {
		t.Fatalf("Diff of equal sets = %v", got)
	}
}

func TestWindowRoundsInwards(t *testing.T) {
	for _, tc := range []struct {
		from, to   int64
		start, end int64
		ok         bool
	}{
		{1000, 5000, 1, 5, true},
		{1001, 4999, 2, 4, true},
		{1500, 2400, 0, 0, false},
		{-1500, 1500, -1, 1, true},
		{2000, 2000, 0, 0, false},
	} {
		s, e, ok := Window(tc.from, tc.to)
		if ok != tc.ok || ok && (s.Unix() != tc.start || e.Unix() != tc.end) {
			t.Errorf("Window(%d, %d) = %v, %v, %v; want %d, %d, %v", tc.from, tc.to, s.Unix(), e.Unix(), ok, tc.start, tc.end, tc.ok)
		}
	}
}

func TestValidate(t *testing.T) {
	good := spec("1", "n1", 10, 20)
	if err := good.Validate(pfx); err != nil {
		t.Fatal(err)
	}
	mod := func(f func(*Spec)) Spec { s := good; s.Nodes = slices.Clone(good.Nodes); f(&s); return s }
	for field, s := range map[string]Spec{
		"prefix":         mod(func(s *Spec) { s.Name = "x-1" }),
		"character":      mod(func(s *Spec) { s.Name = pfx + "a,b" }),
		"nodes: none":    mod(func(s *Spec) { s.Nodes = nil }),
		"nodes: twice":   mod(func(s *Spec) { s.Nodes = []string{"n1", "n1"} }),
		"users: empty":   mod(func(s *Spec) { s.Users = []string{""} }),
		"accounts: x=y":  mod(func(s *Spec) { s.Accounts = []string{"x=y"} }),
		"end: not after": mod(func(s *Spec) { s.End = s.Start }),
		"whole seconds":  mod(func(s *Spec) { s.End = s.End.Add(time.Millisecond) }),
		"no mapping":     mod(func(s *Spec) { s.Users = nil }),
	} {
		if err := s.Validate(pfx); err == nil {
			t.Errorf("%s: accepted %+v", field, s)
		}
	}
	if err := mod(func(s *Spec) { s.Name = "x-1" }).Validate(pfx); !errors.Is(err, ErrNotOwned) {
		t.Errorf("foreign name: %v, want ErrNotOwned", err)
	}
}

func TestApplyStopsWhenUnavailable(t *testing.T) {
	m := newModel(pfx, at(0), nil)
	m.failAt, m.failErr = 2, ErrUnavailable
	p := Reconcile([]Spec{spec("1", "n1", 10, 20), spec("2", "n2", 10, 20), spec("3", "n3", 10, 20)}, nil, pfx, at(0))
	results, err := Apply(context.Background(), m, p.Actions)
	if !errors.Is(err, ErrUnavailable) || len(results) != 2 || results[0].Err != nil {
		t.Fatalf("results %v, err %v: want the first done, the second unavailable, the third not tried", results, err)
	}
	// The next round picks up what is left.
	m.failAt = 0
	obs, _ := m.Reservations(context.Background())
	p = Reconcile([]Spec{spec("1", "n1", 10, 20), spec("2", "n2", 10, 20), spec("3", "n3", 10, 20)}, obs, pfx, at(0))
	if got := summary(p); got != "create 2; create 3" {
		t.Fatalf("next round %q", got)
	}
}

// seed returns the seed of a randomized test: $BRIDGE_SEED or a fresh one,
// printed so a failure can be replayed.
func seed(t *testing.T) uint64 {
	if s := os.Getenv("BRIDGE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("BRIDGE_SEED: %v", err)
		}
		return v
	}
	v := rand.Uint64()
	t.Logf("seed %d (replay with BRIDGE_SEED=%d)", v, v)
	return v
}

// world generates a valid manager state (no overlaps on a node) of owned
// and foreign reservations, and a desired set that reuses some owned names,
// may overlap itself and the foreign ones, and includes invalid specs.
func world(r *rand.Rand) (desired []Spec, observed []Reservation) {
	nodes := []string{"n1", "n2", "n3", "n4", "n5", "n6"}
	pick := func() []string {
		var out []string
		for _, n := range nodes {
			if r.IntN(3) == 0 {
				out = append(out, n)
			}
		}
		if len(out) == 0 {
			out = []string{nodes[r.IntN(len(nodes))]}
		}
		return out
	}
	window := func() (int, int) {
		from := r.IntN(120) - 30
		return from, from + 1 + r.IntN(40)
	}
	m := newModel(pfx, at(0), nil)
	for i := range r.IntN(12) {
		from, to := window()
		name := pfx + strconv.Itoa(r.IntN(10))
		var flags []string
		if r.IntN(3) == 0 {
			name = fmt.Sprintf("hand%d", i)
			if r.IntN(2) == 0 {
				flags = []string{"MAINT"}
			}
		}
		cand := Reservation{Name: name, Nodes: pick(), Start: at(from), End: at(to), Users: []string{"alice"}, Flags: flags}
		if _, dup := m.res[name]; dup || to <= 0 { // the manager drops ended ones
			continue
		}
		if _, clash := m.conflict(cand); !clash {
			m.res[name] = cand
		}
	}
	observed = m.list()
	for range r.IntN(12) {
		from, to := window()
		s := Spec{Name: pfx + strconv.Itoa(r.IntN(10)), Nodes: pick(), Start: at(from), End: at(to)}
		switch r.IntN(6) {
		case 0:
			s.Accounts = []string{"physics"}
		case 1: // no mapping: rejected
		default:
			s.Users = []string{"alice"}
		}
		if r.IntN(4) == 0 { // an owned one, wanted as it is
			for _, o := range observed {
				if Owns(pfx, o.Name) {
					s = o.Spec()
					break
				}
			}
		}
		desired = append(desired, s)
	}
	return desired, observed
}

// TestReconcileProperties checks, on random worlds against the model
// manager: every planned write succeeds; one round converges (a second
// Reconcile plans nothing); the manager then holds exactly the accepted
// desired set; foreign reservations are never written and stay as they
// were; no two reservations overlap on a node; and the plan does not
// depend on the order of its inputs.
func TestReconcileProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 1))
	now := at(0)
	ops := map[string]int{}
	defer func() { t.Logf("actions and outcomes over all worlds: %v", ops) }()
	for i := range 2000 {
		desired, observed := world(r)
		p := Reconcile(desired, observed, pfx, now)
		for _, a := range p.Actions {
			ops[string(a.Op)]++
			if strings.HasPrefix(a.Why, "recreate") {
				ops["recreate"]++
			}
		}
		ops["rejected"] += len(p.Rejected)

		shuffled := slices.Clone(desired)
		r.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		obs2 := slices.Clone(observed)
		r.Shuffle(len(obs2), func(a, b int) { obs2[a], obs2[b] = obs2[b], obs2[a] })
		if p2 := Reconcile(shuffled, obs2, pfx, now); !reflect.DeepEqual(p, p2) {
			t.Fatalf("world %d: plan depends on input order:\n%q\n%q", i, summary(p), summary(p2))
		}

		m := newModel(pfx, now, observed)
		for _, a := range p.Actions {
			if !Owns(pfx, a.Name) {
				t.Fatalf("world %d: action on foreign %s", i, a.Name)
			}
		}
		for _, res := range mustApply(t, m, p) {
			if res.Err != nil {
				t.Fatalf("world %d: %v: %v\nobserved:\n%s\nplan %q", i, res.Action, res.Err, newModel(pfx, now, observed), summary(p))
			}
		}
		if again := Reconcile(desired, m.list(), pfx, now); !again.Converged() {
			t.Fatalf("world %d: second round plans %q\nstate:\n%s", i, summary(again), m)
		}
		rejected := map[string]bool{}
		for _, rj := range p.Rejected {
			rejected[rj.Name] = true
		}
		var want []string
		for _, s := range desired {
			if !rejected[s.Name] && s.End.After(now) {
				want = append(want, s.Name)
			}
		}
		slices.Sort(want)
		var got []string
		for _, res := range m.list() {
			if Owns(pfx, res.Name) {
				got = append(got, res.Name)
			} else if !slices.ContainsFunc(observed, func(o Reservation) bool { return reflect.DeepEqual(o, res) }) {
				t.Fatalf("world %d: foreign %s changed", i, res.Name)
			}
		}
		if !slices.Equal(got, slices.Compact(want)) {
			t.Fatalf("world %d: manager holds %v, want the accepted set %v", i, got, want)
		}
		for _, res := range m.list() {
			if o, clash := m.conflict(res); clash {
				t.Fatalf("world %d: %s overlaps %s", i, res.Name, o)
			}
		}
	}
}

func TestStatuses(t *testing.T) {
	now := at(0)
	noUsers := spec("9", "n1", 10, 20)
	noUsers.Users = nil
	desired := []Spec{spec("1", "n1", 10, 20), spec("2", "n2", 10, 20), spec("3", "n3", 10, 20), spec("4", "n4", 10, 20), noUsers, spec("5", "n5", -20, -10)}
	observed := []Reservation{res(pfx+"1", "n1", 10, 20), res(pfx+"old", "n6", 10, 20), res("hand", "n3", 0, 30)}
	p := Reconcile(desired, observed, pfx, now)
	if got := summary(p); got != "delete old; create 2; create 4; reject 3; reject 9" {
		t.Fatalf("plan %q", got)
	}
	// The delete went through, 2 was refused by the manager, then the
	// manager went away before 4.
	results := []Result{
		{Action: p.Actions[0]},
		{Action: p.Actions[1], Err: &Error{Op: "create", Name: pfx + "2", Kind: ErrInvalidUser, Message: "Invalid user id"}},
	}
	var got []string
	for _, s := range Statuses(p, results) {
		got = append(got, fmt.Sprintf("%s=%s(%s)", strings.TrimPrefix(s.Name, pfx), s.State, s.Message))
	}
	want := []string{
		"1=materialized()",
		"2=failed(Invalid user id)",
		"3=failed(overlaps hand-made reservation hand on node n3)",
		"4=pending(not attempted: the resource manager was unavailable earlier in the round)",
		"9=failed(reservation lg-9: users and accounts: neither given (the tenant has no mapping))",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("statuses\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	results = append(results, Result{Action: p.Actions[2], Err: &Error{Op: "create", Kind: ErrUnavailable, Message: "Unable to contact slurm controller"}})
	if s := Statuses(p, results)[3]; s.State != StatePending || s.Message != "Unable to contact slurm controller" {
		t.Fatalf("unavailable: %+v", s)
	}
}

// TestShortenWhenInUse: a reservation that is not desired any more is
// deleted; when it is active and the manager refuses the delete because
// jobs still run in it (ErrInUse), Apply ends it about now instead, so a
// reservation completed early stops holding its nodes. A future one, or
// one that ends within the next two seconds, is never shortened.
func TestShortenWhenInUse(t *testing.T) {
	now := at(30).Add(1500 * time.Millisecond)
	observed := []Reservation{
		res(pfx+"active", "n1", 10, 60),
		res(pfx+"future", "n2", 40, 60),
		res(pfx+"ending", "n3", 0, 0),
	}
	observed[2].End = now.Add(time.Second) // ends before the shortened end would
	p := Reconcile(nil, observed, pfx, now)
	if got := summary(p); got != "delete active; delete ending; delete future" {
		t.Fatalf("plan %q", got)
	}
	want := now.Truncate(time.Second).Add(2 * time.Second)
	for _, a := range p.Actions {
		switch strings.TrimPrefix(a.Name, pfx) {
		case "active":
			if a.Shorten == nil || !a.Shorten.End.Equal(want) || !a.Shorten.Start.Equal(a.Have.Start) || !slices.Equal(a.Shorten.Nodes, a.Have.Nodes) {
				t.Fatalf("active: shorten %+v, want the same reservation ending at %v", a.Shorten, want)
			}
		default:
			if a.Shorten != nil {
				t.Fatalf("%s: shortened to %+v, want a plain delete", a.Name, a.Shorten)
			}
		}
	}

	m := newModel(pfx, now, observed)
	m.failAt, m.failErr = 2, ErrInUse // the first call is the list below
	if _, err := m.Reservations(context.Background()); err != nil {
		t.Fatal(err)
	}
	results, err := Apply(context.Background(), m, p.Actions)
	if err != nil {
		t.Fatal(err)
	}
	if r := results[0]; r.Err != nil || !r.Shortened {
		t.Fatalf("in-use delete: %+v, want shortened without error", r)
	}
	if got := m.res[pfx+"active"]; !got.End.Equal(want) {
		t.Fatalf("active now ends at %v, want %v", got.End, want)
	}
	for _, r := range results[1:] {
		if r.Err != nil || r.Shortened {
			t.Fatalf("%s: %+v, want deleted", r.Action.Name, r)
		}
	}
}
