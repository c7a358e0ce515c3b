package jepsen

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GroupStats counts the shared log entries (group commit) the leaders of
// a run proposed: how many entries carried several admissions, and how
// many admissions they carried. It is read from every node's metrics,
// which count from the process's start, so a node that was killed and
// restarted contributes what it counted before the kill (up to its last
// sample) plus what it counted since.
type GroupStats struct {
	// Entries is the number of group entries proposed.
	Entries int64 `json:"entries"`
	// Commands is the number of commands those entries carried.
	Commands int64 `json:"commands"`
	// Samples is the number of metric scrapes that answered.
	Samples int `json:"samples"`
}

// Text is the report's one-line summary.
func (g GroupStats) Text() string {
	if g.Entries == 0 {
		return fmt.Sprintf("no group entry proposed (%d metric samples)", g.Samples)
	}
	return fmt.Sprintf("%d group entries carried %d commands (%.1f per entry; %d metric samples)",
		g.Entries, g.Commands, float64(g.Commands)/float64(g.Entries), g.Samples)
}

// The counters the cluster package exports (cluster/metrics.go).
const (
	metricGroupEntries  = "ledgerd_group_entries_total"
	metricGroupCommands = "ledgerd_grouped_commands_total"
	// The log check: windows of applied entries a node found equal to,
	// or different from, a peer's.
	metricCheckMatched    = "ledgerd_log_check_windows_matched_total"
	metricCheckMismatched = "ledgerd_log_check_windows_mismatched_total"
)

// sampledMetrics are the counters the sampler follows.
var sampledMetrics = []string{metricGroupEntries, metricGroupCommands, metricCheckMatched, metricCheckMismatched}

// restartCounter follows one counter of one node across restarts: banked
// holds what earlier processes counted, last the current process's latest
// sample.
type restartCounter struct{ banked, last int64 }

// observe takes a new sample; a value below the last one means the
// process restarted and began counting from zero again.
func (c *restartCounter) observe(v int64) {
	if v < c.last {
		c.banked += c.last
	}
	c.last = v
}

func (c restartCounter) total() int64 { return c.banked + c.last }

// metricSampler scrapes every node's counters (sampledMetrics: group
// commit and the log check) at a fixed interval during the run and once
// more at its end.
type metricSampler struct {
	names  []string
	addr   func(name string) string // the node's API host:port now
	scheme string
	token  string
	hc     *http.Client

	mu      sync.Mutex
	nodes   map[string]map[string]*restartCounter // node -> metric -> counter
	samples int
}

func newMetricSampler(names []string, addr func(string) string, tlsConf *tls.Config, token string) *metricSampler {
	s := &metricSampler{
		names: names, addr: addr, scheme: "http", token: token,
		nodes: map[string]map[string]*restartCounter{},
		hc: &http.Client{Transport: &http.Transport{
			DialContext:     (&net.Dialer{Timeout: time.Second}).DialContext,
			TLSClientConfig: tlsConf.Clone(),
		}},
	}
	if tlsConf != nil {
		s.scheme = "https"
	}
	for _, n := range names {
		s.nodes[n] = map[string]*restartCounter{}
		for _, m := range sampledMetrics {
			s.nodes[n][m] = &restartCounter{}
		}
	}
	return s
}

// Run samples every interval until ctx ends.
func (s *metricSampler) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.SampleAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SampleAll scrapes every node once; nodes that do not answer (killed,
// paused, cut off) are skipped.
func (s *metricSampler) SampleAll(ctx context.Context) {
	for _, name := range s.names {
		cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		vals, err := s.scrape(cctx, s.addr(name))
		cancel()
		if err != nil {
			continue
		}
		s.mu.Lock()
		for m, c := range s.nodes[name] {
			c.observe(vals[m])
		}
		s.samples++
		s.mu.Unlock()
	}
}

func (s *metricSampler) scrape(ctx context.Context, addr string) (map[string]int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.scheme+"://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics of %s: %s", addr, resp.Status)
	}
	return parseCounters(resp.Body)
}

// parseCounters reads sampledMetrics from a Prometheus text exposition; a
// counter that is absent reads as zero (a node that never led proposes
// no group; one of the previous release has no log check).
func parseCounters(r io.Reader) (map[string]int64, error) {
	out := map[string]int64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || !slices.Contains(sampledMetrics, name) {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, fmt.Errorf("metric %s: value %q: %w", name, value, err)
		}
		out[name] = int64(f)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading metrics: %w", err)
	}
	return out, nil
}

// Stats sums the counters over every node and incarnation.
func (s *metricSampler) Stats() GroupStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := GroupStats{Samples: s.samples}
	for _, n := range s.names {
		g.Entries += s.nodes[n][metricGroupEntries].total()
		g.Commands += s.nodes[n][metricGroupCommands].total()
	}
	return g
}

// LogCheck is the invariant "log-check-agrees": no node found a window of
// applied log entries that differs from a peer's (the nodes' own online
// check, read from their metrics). Checked counts the windows compared,
// by every node with each peer.
func (s *metricSampler) LogCheck() InvariantResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := InvariantResult{Name: "log-check-agrees", OK: true}
	for _, n := range s.names {
		r.Checked += int(s.nodes[n][metricCheckMatched].total())
		if bad := s.nodes[n][metricCheckMismatched].total(); bad > 0 {
			r.OK = false
			r.Checked += int(bad)
			r.Violations = append(r.Violations, fmt.Sprintf("%s found %d windows of log entries that differ from a peer's (its log names them)", n, bad))
		}
	}
	return r
}
