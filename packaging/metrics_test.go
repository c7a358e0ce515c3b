package packaging_test

import (
	"bufio"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/internal/testbin"
)

// repoRoot is the module root, one level up: the test runs
// in packaging/.
const repoRoot = ".."

// ledgerdBinary builds cmd/ledgerd from this tree once per test binary.
func ledgerdBinary(t *testing.T) string { return testbin.Ledgerd(t) }

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// bannerAddr finds the API address in the dev agent's ready banner.
var bannerAddr = regexp.MustCompile(`HTTP API \(.*\): http://(\S+)`)

// scrapeDevAgent starts `ledgerd agent -dev`, waits until it is ready and
// returns the metric family names its /metrics exposes.
func scrapeDevAgent(t *testing.T) map[string]bool {
	t.Helper()
	bin := ledgerdBinary(t)
	ctx, cancel := context.WithCancel(context.Background())
	// The agent binds a port of the kernel's choosing and prints it, so no
	// other process can take the port between choosing and binding.
	cmd := exec.CommandContext(ctx, bin, "agent", "-dev", "-http-addr", "127.0.0.1:0", "-log-level", "warn")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 20 * time.Second
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("agent output:\n%s", logs.String())
		}
	}()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	var err error
	for {
		// The dev agent seeds sample data through the log after it is
		// ready and prints its banner, with its address, when done; by
		// then every family that a write touches has been observed.
		if m := bannerAddr.FindStringSubmatch(logs.String()); m != nil {
			var names map[string]bool
			var ready bool
			names, ready, err = scrape(client, "http://"+m[1]+"/metrics")
			if err == nil && ready {
				return names
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("dev agent not ready after 60s (last error: %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// lockedBuffer collects a child's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// scrape reads a text exposition and returns its family names and whether
// ledgerd_ready is 1.
func scrape(c *http.Client, url string) (map[string]bool, bool, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, false, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	names := map[string]bool{}
	ready := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			names[f[2]] = true
		}
		if v, ok := strings.CutPrefix(line, "ledgerd_ready "); ok {
			ready = strings.TrimSpace(v) == "1"
		}
	}
	return names, ready, sc.Err()
}

var metricNameRE = regexp.MustCompile(`^ledgerd_[a-z0-9_]+$`)

// declaredMetricNames returns the ledgerd_* string constants in the
// non-test Go sources of the packages that register metrics. A labelled
// vector (say ledgerd_apply_errors_total) is not exposed until its first
// observation, so a fresh dev agent cannot show it; its registration in
// the source is the evidence instead.
func declaredMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, dir := range []string{"cluster", "fsm", "rpc", "cmd/ledgerd"} {
		root := filepath.Join(repoRoot, dir)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil && metricNameRE.MatchString(s) {
						names[s] = true
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// promqlWords are PromQL keywords and Grafana variables that look like
// identifiers but are not metric names.
var promqlWords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true,
	"le": true,
}

var (
	stringRE     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	matcherRE    = regexp.MustCompile(`\{[^{}]*\}`)
	rangeRE      = regexp.MustCompile(`\[[^\]]*\]`)
	numberRE     = regexp.MustCompile(`\b[0-9][0-9.]*(?:ms|s|m|h|d|w|y|[eE][+-]?[0-9]+)*\b`)
	groupingRE   = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	identifierRE = regexp.MustCompile(`[A-Za-z_:$][A-Za-z0-9_:]*(\s*\()?`)
)

// metricsIn returns the metric names a PromQL expression selects. It is a
// deliberately small lexer, not a parser: it drops strings, label
// matchers, ranges and grouping clauses, then keeps identifiers that are
// not function calls or keywords.
func metricsIn(expr string) []string {
	s := stringRE.ReplaceAllString(expr, `""`)
	s = matcherRE.ReplaceAllString(s, " ")
	s = rangeRE.ReplaceAllString(s, " ")
	s = groupingRE.ReplaceAllString(s, " ")
	s = numberRE.ReplaceAllString(s, " ")
	var out []string
	for _, m := range identifierRE.FindAllStringSubmatch(s, -1) {
		word := strings.TrimRight(strings.TrimSuffix(strings.TrimSpace(m[0]), "("), " ")
		if m[1] != "" || strings.HasPrefix(word, "$") || promqlWords[strings.ToLower(word)] {
			continue
		}
		out = append(out, word)
	}
	return out
}

func TestMetricsIn(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want string
	}{
		{`sum by (job) (ledgerd_raft_is_leader{job="ledgerd"}) < 1`, "ledgerd_raft_is_leader"},
		{`histogram_quantile(0.99, sum by (job, le) (rate(ledgerd_apply_duration_seconds_bucket{path="local"}[5m])))`, "ledgerd_apply_duration_seconds_bucket"},
		{`a - on (job) group_left b`, "a b"},
		{`rate(x_total{class=~"a|b(c)"}[$__rate_interval]) > 0 and y unless z offset 5m`, "x_total y z"},
		{`up{job="ledgerd"} == 0`, "up"},
	} {
		if got := strings.Join(metricsIn(tc.expr), " "); got != tc.want {
			t.Errorf("metricsIn(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// prometheusSeries are series Prometheus itself adds to every target.
var prometheusSeries = map[string]bool{"up": true, "scrape_duration_seconds": true, "scrape_samples_scraped": true}

// checkReferenced fails for every referenced metric the binary neither
// exposed nor declares.
func checkReferenced(t *testing.T, what string, exprs map[string]string, scraped, declared map[string]bool) {
	t.Helper()
	if len(exprs) == 0 {
		t.Fatalf("%s: no expressions found", what)
	}
	keys := make([]string, 0, len(exprs))
	for k := range exprs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, where := range keys {
		names := metricsIn(exprs[where])
		if len(names) == 0 {
			t.Errorf("%s %s: expression %q selects no metric", what, where, exprs[where])
		}
		for _, name := range names {
			if prometheusSeries[name] {
				continue
			}
			base := name
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(name, suf); ok && (scraped[b] || declared[b]) {
					base = b
				}
			}
			switch {
			case scraped[base]:
			case declared[base]:
				t.Logf("%s %s: %s is declared in the source but not yet exposed by a fresh agent", what, where, name)
			default:
				t.Errorf("%s %s: metric %s is not exported by ledgerd", what, where, name)
			}
		}
	}
}

// TestReferencedMetricsExist is the drift check between the binary and the
// dashboard and alerts.
func TestReferencedMetricsExist(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the agent")
	}
	scraped := scrapeDevAgent(t)
	declared := declaredMetricNames(t)
	for _, must := range []string{"ledgerd_raft_is_leader", "ledgerd_apply_duration_seconds", "process_open_fds"} {
		if !scraped[must] {
			t.Fatalf("the dev agent does not expose %s; the scrape is broken (%d families)", must, len(scraped))
		}
	}
	checkReferenced(t, "dashboard", dashboardExprs(t), scraped, declared)
	rules := loadRules(t)
	exprs := map[string]string{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs[r.Alert] = r.Expr
		}
	}
	checkReferenced(t, "alert", exprs, scraped, declared)

	// The check must be able to fail: a made-up name is caught.
	if names := metricsIn(`rate(ledgerd_no_such_metric_total[5m])`); scraped[names[0]] || declared[names[0]] {
		t.Errorf("a nonexistent metric passed the check")
	}
}
