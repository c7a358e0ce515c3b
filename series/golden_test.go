package series

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// goldenCase is one case of a testdata file: rules that must all expand,
// from one DTSTART, to the listed instants.
type goldenCase struct {
	name, zone, start string
	rules             []string
	notBefore, window int64
	want              []int64
	wantText          []string
	line              int
}

func readGolden(t *testing.T, name string) []goldenCase {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []goldenCase
	var c *goldenCase
	parseTime := func(n int, s string) int64 {
		tm, err := time.Parse(time.RFC3339, strings.TrimSpace(s))
		if err != nil {
			t.Fatalf("%s:%d: %v", name, n, err)
		}
		return tm.UnixMilli()
	}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		if strings.HasPrefix(line, "  ") {
			if c == nil {
				t.Fatalf("%s:%d: instant outside a case", name, n)
			}
			c.want = append(c.want, parseTime(n, line))
			c.wantText = append(c.wantText, strings.TrimSpace(line))
			continue
		}
		key, val, ok := strings.Cut(line, ": ")
		if !ok && line != "want:" {
			t.Fatalf("%s:%d: bad line %q", name, n, line)
		}
		switch key {
		case "case":
			cases = append(cases, goldenCase{name: val, line: n})
			c = &cases[len(cases)-1]
		case "rfc", "want:":
		case "rule":
			c.rules = append(c.rules, val)
		case "start":
			c.zone, c.start, _ = strings.Cut(val, " ")
		case "not_before":
			c.notBefore = parseTime(n, val)
		case "window":
			c.window = parseTime(n, val)
		default:
			t.Fatalf("%s:%d: unknown key %q", name, n, key)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// goldenLimits admit every RFC example (MINUTELY every 15 minutes
// included); the defaults would refuse those.
var goldenLimits = Limits{
	MaxOccurrences:  10000,
	MaxPerExpansion: 10000,
	DefaultHorizon:  time.Hour,
	MaxHorizon:      100 * 366 * 24 * time.Hour,
	MinInterval:     time.Minute,
}

func runGolden(t *testing.T, file string, wantCases int) {
	cases := readGolden(t, file)
	if len(cases) != wantCases {
		t.Fatalf("%s has %d cases, want %d", file, len(cases), wantCases)
	}
	rules := 0
	for _, c := range cases {
		for _, text := range c.rules {
			rules++
			r, err := parseRule(text)
			if err != nil {
				t.Errorf("%s:%d %s: %s: %v", file, c.line, c.name, text, err)
				continue
			}
			spec := Spec{Rule: r.String(), Zone: c.zone, Start: c.start, NotBefore: c.notBefore, Duration: 60_000}
			if r.count == 0 && r.until == "" {
				spec.Horizon = time.Hour.Milliseconds()
			}
			s, err := Compile(spec, goldenLimits)
			if err != nil {
				t.Errorf("%s:%d %s: %s: %v", file, c.line, c.name, text, err)
				continue
			}
			to := int64(maxInt64)
			if c.window != 0 {
				to = c.window
			}
			got := s.Expand(0, to)
			if !equalInt64s(got, c.want) {
				t.Errorf("%s:%d %s\nrule %s\n got %s\nwant %s", file, c.line, c.name, text,
					formatAll(got, s.Location()), strings.Join(c.wantText, " "))
			}
			if n, ok := s.Bounded(); ok && c.window == 0 && n != len(c.want) {
				t.Errorf("%s:%d %s: Bounded() = %d, want %d", file, c.line, c.name, n, len(c.want))
			}
		}
	}
	t.Logf("%s: %d cases, %d rules", file, len(cases), rules)
}

// TestRFC5545Examples expands every example of RFC 5545 §3.8.5.3 (40
// cases, 43 rules counting the alternative spellings; the hourly example
// twice, as its title means it and as printed) and compares with
// the instants the RFC lists.
func TestRFC5545Examples(t *testing.T) { runGolden(t, "rfc5545.txt", 40) }

// TestDSTMonthEndsLeapDays covers two zones' spring and autumn changes
// (times that do not exist and times that exist twice), month ends, leap
// days, COUNT, UNTIL and not_before.
func TestDSTMonthEndsLeapDays(t *testing.T) { runGolden(t, "dst.txt", 21) }

func equalInt64s(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func formatAll(ms []int64, loc *time.Location) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = time.UnixMilli(m).In(loc).Format(time.RFC3339)
	}
	return strings.Join(s, " ")
}
