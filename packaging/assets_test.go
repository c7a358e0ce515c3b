package packaging_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"
)

type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID          int    `json:"id"`
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	GridPos     struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile("grafana/ledgerd-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	return d
}

func dashboardExprs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range loadDashboard(t).Panels {
		for _, tg := range p.Targets {
			out[p.Title+"/"+tg.RefID] = tg.Expr
		}
	}
	return out
}

func TestDashboardLint(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard needs uid and title, got %q %q", d.UID, d.Title)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	for _, want := range []string{"datasource", "job", "instance"} {
		if !vars[want] {
			t.Errorf("dashboard lacks the $%s variable", want)
		}
	}
	ids := map[int]bool{}
	// occupied marks grid cells so overlapping panels are caught.
	occupied := map[[2]int]string{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := occupied[[2]int{x, y}]; ok {
					t.Errorf("panel %q overlaps %q at (%d,%d)", p.Title, other, x, y)
					x, y = g.X+g.W, g.Y+g.H
				} else {
					occupied[[2]int{x, y}] = p.Title
				}
			}
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %q, want the ${datasource} variable", p.Title, p.Datasource.UID)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if err := checkBalanced(tg.Expr); err != "" {
				t.Errorf("panel %q/%s: %s in %q", p.Title, tg.RefID, err, tg.Expr)
			}
			if !strings.Contains(tg.Expr, `job="$job"`) {
				t.Errorf("panel %q/%s does not filter on $job: %q", p.Title, tg.RefID, tg.Expr)
			}
		}
	}
}

// checkBalanced reports unbalanced brackets outside string literals.
func checkBalanced(expr string) string {
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	inStr := false
	for i, r := range expr {
		switch {
		case inStr:
			if r == '"' && (i == 0 || expr[i-1] != '\\') {
				inStr = false
			}
		case r == '"':
			inStr = true
		case r == '(' || r == '[' || r == '{':
			stack = append(stack, r)
		case r == ')' || r == ']' || r == '}':
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				return "unbalanced " + string(r)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if inStr {
		return "unterminated string"
	}
	if len(stack) > 0 {
		return "unclosed " + string(stack[len(stack)-1])
	}
	return ""
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	f, err := os.Open("prometheus/ledgerd-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rf ruleFile
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("alert rules: %v", err)
	}
	return rf
}

var (
	alertNameRE = regexp.MustCompile(`^Ledgerd[A-Z][A-Za-z]+$`)
	promDurRE   = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)
)

// templateFuncs are the Prometheus alert template functions the rules may
// use; parsing with them catches typos in annotations.
var templateFuncs = template.FuncMap{
	"humanize": fmtAny, "humanizeDuration": fmtAny, "humanizePercentage": fmtAny, "humanize1024": fmtAny,
	"printf": func(string, ...any) string { return "" }, "toUpper": strings.ToUpper, "toLower": strings.ToLower,
}

func fmtAny(any) string { return "" }

func TestAlertRulesLint(t *testing.T) {
	rf := loadRules(t)
	if len(rf.Groups) == 0 {
		t.Fatal("no rule groups")
	}
	seen := map[string]bool{}
	for _, g := range rf.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q is unnamed or empty", g.Name)
		}
		for _, r := range g.Rules {
			if !alertNameRE.MatchString(r.Alert) {
				t.Errorf("alert %q: name must be Ledgerd + CamelCase", r.Alert)
			}
			if seen[r.Alert] {
				t.Errorf("alert %q defined twice", r.Alert)
			}
			seen[r.Alert] = true
			if strings.TrimSpace(r.Expr) == "" {
				t.Errorf("alert %s: empty expr", r.Alert)
			}
			if err := checkBalanced(r.Expr); err != "" {
				t.Errorf("alert %s: %s in expr", r.Alert, err)
			}
			if r.For == "" || !promDurRE.MatchString(r.For) {
				t.Errorf("alert %s: for %q is not a Prometheus duration", r.Alert, r.For)
			} else if d, err := time.ParseDuration(r.For); err == nil && d > time.Hour {
				t.Errorf("alert %s: for %s is longer than an hour", r.Alert, r.For)
			}
			switch r.Labels["severity"] {
			case "critical", "warning":
			default:
				t.Errorf("alert %s: severity %q, want critical or warning", r.Alert, r.Labels["severity"])
			}
			for _, k := range []string{"summary", "description"} {
				text := r.Annotations[k]
				if text == "" {
					t.Errorf("alert %s: no %s annotation", r.Alert, k)
					continue
				}
				// Prometheus prepends $labels/$value definitions.
				src := `{{$labels := .Labels}}{{$value := .Value}}` + text
				if _, err := template.New(r.Alert).Funcs(templateFuncs).Parse(src); err != nil {
					t.Errorf("alert %s: %s template: %v", r.Alert, k, err)
				}
			}
		}
	}
	// The conditions the operations guide promises an alert for.
	for _, want := range []string{"LedgerdNoLeader", "LedgerdApplyLatencyHigh", "LedgerdApplyErrors", "LedgerdNoFailureTolerance", "LedgerdLogNotAdvancing",
		"LedgerdHoldsPilingUp", "LedgerdLogTimeStale", "LedgerdSnapshotFailures"} {
		if !seen[want] {
			t.Errorf("missing alert %s", want)
		}
	}
}

// promtoolBinary returns $PROMTOOL or promtool from PATH, or skips.
func promtoolBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROMTOOL"); p != "" {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not on PATH and $PROMTOOL unset")
	}
	return p
}

// TestPromtoolCheckRules runs Prometheus's own checker when available.
func TestPromtoolCheckRules(t *testing.T) {
	out, err := exec.Command(promtoolBinary(t), "check", "rules", "prometheus/ledgerd-alerts.yml").CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// TestPromtoolTestRules runs the rules' unit tests (series in, alerts out)
// in prometheus/ledgerd-alerts_test.yml.
func TestPromtoolTestRules(t *testing.T) {
	cmd := exec.Command(promtoolBinary(t), "test", "rules", "ledgerd-alerts_test.yml")
	cmd.Dir = "prometheus"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// TestSystemdUnitMatchesRendered keeps the packaged unit identical to the
// one the Terraform module renders with its defaults.
func TestSystemdUnitMatchesRendered(t *testing.T) {
	pkg, err := os.ReadFile("systemd/ledgerd.service")
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := os.ReadFile(filepath.Join(repoRoot, "deploy/terraform/testdata/rendered/production/ledgerd-0/ledgerd.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pkg, rendered) {
		t.Errorf("packaging/systemd/ledgerd.service differs from the rendered unit; copy deploy/terraform/testdata/rendered/production/ledgerd-0/ledgerd.service")
	}
	for _, want := range []string{"Restart=on-failure", "LimitNOFILE=65536", "-config-check", "User=ledgerd", "TimeoutStopSec="} {
		if !bytes.Contains(pkg, []byte(want)) {
			t.Errorf("unit lacks %q", want)
		}
	}
}

// TestSystemdAnalyzeVerify asks systemd to lint the unit when it can.
func TestSystemdAnalyzeVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not on PATH")
	}
	unit, err := os.ReadFile("systemd/ledgerd.service")
	if err != nil {
		t.Fatal(err)
	}
	// Point ExecStart at a binary that exists here; systemd checks it.
	unit = bytes.ReplaceAll(unit, []byte("/usr/bin/ledgerd"), []byte(ledgerdBinary(t)))
	verify := func(name string, unit []byte) []string {
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, unit, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(sa, "verify", "--man=no", path).CombinedOutput()
		// Outside a booted systemd (some containers) verify cannot load
		// units at all; only judge its output when it ran.
		for _, s := range []string{"System has not been booted with systemd", "Failed to initialize manager", "Failed to setup working directory"} {
			if bytes.Contains(out, []byte(s)) {
				t.Skipf("systemd-analyze cannot run here: %s", bytes.TrimSpace(out))
			}
		}
		var problems []string
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, path) {
				problems = append(problems, line)
			}
		}
		if err != nil {
			problems = append(problems, err.Error())
		}
		return problems
	}
	if p := verify("ledgerd.service", unit); len(p) > 0 {
		t.Errorf("systemd-analyze verify:\n%s", strings.Join(p, "\n"))
	}
	// The check can fail: systemd must complain about a broken copy.
	broken := bytes.Replace(unit, []byte("Restart=on-failure"), []byte("Restart=sometimes"), 1)
	if p := verify("broken.service", broken); len(p) == 0 {
		t.Error("systemd-analyze verify accepted Restart=sometimes; the check cannot fail")
	}
}
