package jepsen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParseGroupCounters(t *testing.T) {
	for _, tc := range []struct {
		name          string
		in            string
		entries, cmds int64
		wantErr       string
	}{
		{name: "both", in: "# HELP ledgerd_group_entries_total x\n# TYPE ledgerd_group_entries_total counter\nledgerd_group_entries_total 12\nledgerd_grouped_commands_total 40\n", entries: 12, cmds: 40},
		{name: "absent reads zero", in: "go_goroutines 17\nledgerd_apply_rerouted_total 3\n"},
		{name: "exponent form", in: "ledgerd_group_entries_total 1.5e+06\nledgerd_grouped_commands_total 3e+06\n", entries: 1_500_000, cmds: 3_000_000},
		{name: "a longer name is another metric", in: "ledgerd_group_entries_total_x 9\nledgerd_group_entries_total 2\n", entries: 2},
		{name: "bad value names the metric", in: "ledgerd_grouped_commands_total many\n", wantErr: `metric ledgerd_grouped_commands_total: value "many"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals, err := parseCounters(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if e, c := vals[metricGroupEntries], vals[metricGroupCommands]; err != nil || e != tc.entries || c != tc.cmds {
				t.Fatalf("got %d, %d, %v; want %d, %d", e, c, err, tc.entries, tc.cmds)
			}
		})
	}
}

// TestGroupCounterAcrossRestarts: a counter that falls back means the
// node restarted; what it had counted is kept.
func TestGroupCounterAcrossRestarts(t *testing.T) {
	for _, tc := range []struct {
		samples []int64
		want    int64
	}{
		{nil, 0},
		{[]int64{0, 3, 7}, 7},
		{[]int64{5, 9, 0, 4}, 13},    // killed after 9, counts 4 since
		{[]int64{5, 9, 2, 1, 6}, 17}, // restarted after 9 and again after 2
		{[]int64{4, 4, 4}, 4},
	} {
		var c restartCounter
		for _, v := range tc.samples {
			c.observe(v)
		}
		if got := c.total(); got != tc.want {
			t.Errorf("samples %v: total %d, want %d", tc.samples, got, tc.want)
		}
	}
}

// TestGroupSamplerScrapes runs the sampler against two metric endpoints,
// one of which restarts (its counters fall back) and one that stops
// answering.
func TestGroupSamplerScrapes(t *testing.T) {
	var a, b []string
	a = []string{"ledgerd_group_entries_total 2\nledgerd_grouped_commands_total 5\n",
		"ledgerd_group_entries_total 1\nledgerd_grouped_commands_total 2\n"}
	b = []string{"ledgerd_group_entries_total 4\nledgerd_grouped_commands_total 10\n"}
	serve := func(pages *[]string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/metrics" || r.Header.Get("Authorization") != "Bearer tok" {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			if len(*pages) == 0 {
				http.Error(w, "gone", http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte((*pages)[0]))
			*pages = (*pages)[1:]
		}))
	}
	sa, sb := serve(&a), serve(&b)
	defer sa.Close()
	defer sb.Close()
	addrs := map[string]string{"n1": strings.TrimPrefix(sa.URL, "http://"), "n2": strings.TrimPrefix(sb.URL, "http://")}
	s := newMetricSampler([]string{"n1", "n2"}, func(n string) string { return addrs[n] }, nil, "tok")
	ctx := context.Background()
	s.SampleAll(ctx) // n1: 2/5, n2: 4/10
	s.SampleAll(ctx) // n1 restarted: 1/2; n2 no longer answers
	s.SampleAll(ctx) // neither answers
	got := s.Stats()
	want := GroupStats{Entries: 2 + 1 + 4, Commands: 5 + 2 + 10, Samples: 3}
	if got != want {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
	if txt := got.Text(); !strings.Contains(txt, "7 group entries carried 17 commands") {
		t.Errorf("text %q", txt)
	}
}

// TestLogCheckInvariant reads the nodes' log check counters: windows
// compared count as checked, and any window a node found different fails
// the invariant and names the node.
func TestLogCheckInvariant(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pages   map[string]string
		ok      bool
		checked int
		names   string
	}{
		{"all equal", map[string]string{
			"n1": "ledgerd_log_check_windows_matched_total 6\nledgerd_log_check_windows_mismatched_total 0\n",
			"n2": "ledgerd_log_check_windows_matched_total 5\n",
		}, true, 11, ""},
		{"one differs", map[string]string{
			"n1": "ledgerd_log_check_windows_matched_total 6\nledgerd_log_check_windows_mismatched_total 2\n",
			"n2": "ledgerd_log_check_windows_matched_total 5\nledgerd_log_check_windows_mismatched_total 1\n",
		}, false, 14, "n1 found 2"},
		{"previous release: no counters", map[string]string{"n1": "go_goroutines 3\n", "n2": "go_goroutines 4\n"}, true, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs := map[string]string{}
			for n, page := range tc.pages {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = w.Write([]byte(page))
				}))
				defer srv.Close()
				addrs[n] = strings.TrimPrefix(srv.URL, "http://")
			}
			s := newMetricSampler([]string{"n1", "n2"}, func(n string) string { return addrs[n] }, nil, "")
			s.SampleAll(context.Background())
			r := s.LogCheck()
			if r.Name != "log-check-agrees" || r.OK != tc.ok || r.Checked != tc.checked || tc.names != "" && !strings.Contains(strings.Join(r.Violations, "; "), tc.names) {
				t.Fatalf("got %+v; want ok %v, checked %d, a violation naming %q", r, tc.ok, tc.checked, tc.names)
			}
		})
	}
}
