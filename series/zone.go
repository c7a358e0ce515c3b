package series

import (
	"archive/zip"
	"bytes"
	_ "embed" // zoneinfo.zip is the only zone database expansion reads
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// TZDataVersion is the release of the IANA time zone database in
// zoneinfo.zip, the only zone data this package reads. It is the archive Go
// 1.26 ships in lib/time (the same data as the time/tzdata package), copied
// here so that the zone rules are those of this source tree, not those of
// the host or of the Go toolchain that built the binary. Updating the file
// means updating this constant and zoneinfoSHA256 (a test checks both).
const TZDataVersion = "2025c"

// zoneinfoSHA256 pins the bytes of zoneinfo.zip; TestZoneinfoPinned fails
// when the file changes without TZDataVersion.
const zoneinfoSHA256 = "8f55634d05f8bca1f7bc7c69c5933428c69357e0bdf565e5ba224e3f88ff12e8"

//go:embed zoneinfo.zip
var zoneinfo []byte

// maxZoneNameLen bounds an IANA zone name (the longest real one,
// America/Argentina/ComodRivadavia, has 32 bytes).
const maxZoneNameLen = 64

var zones struct {
	once  sync.Once
	files map[string]*zip.File
	err   error

	mu     sync.Mutex
	loaded map[string]*time.Location
}

// LoadZone returns the named IANA zone (e.g. "Europe/Berlin") from the
// database embedded in this package, never from the host or from Go's own
// copy: time.LoadLocation prefers the host's /usr/share/zoneinfo and
// falls back on time/tzdata only when the host has none, so two leaders on
// hosts with different tzdata releases would expand one series into
// different instants. "UTC" is accepted; "Local" and "" are not, since
// they would mean the host's zone.
//
// Locations are cached; LoadZone is safe for concurrent use.
func LoadZone(name string) (*time.Location, error) {
	if why := zoneNameProblem(name); why != "" {
		return nil, &FieldError{Field: FieldTZ, Reason: why}
	}
	if name == "UTC" {
		return time.UTC, nil
	}
	zones.once.Do(openZoneinfo)
	if zones.err != nil {
		return nil, fmt.Errorf("series: embedded zone database: %w", zones.err)
	}
	zones.mu.Lock()
	defer zones.mu.Unlock()
	if loc, ok := zones.loaded[name]; ok {
		return loc, nil
	}
	f, ok := zones.files[name]
	if !ok {
		return nil, &FieldError{Field: FieldTZ, Reason: fmt.Sprintf("unknown time zone %q (IANA names such as Europe/Berlin, tzdata %s)", name, TZDataVersion)}
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("series: zone %q: %w", name, err)
	}
	data, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("series: zone %q: %w", name, err)
	}
	loc, err := time.LoadLocationFromTZData(name, data)
	if err != nil {
		return nil, fmt.Errorf("series: zone %q: %w", name, err)
	}
	zones.loaded[name] = loc
	return loc, nil
}

func openZoneinfo() {
	r, err := zip.NewReader(bytes.NewReader(zoneinfo), int64(len(zoneinfo)))
	if err != nil {
		zones.err = err
		return
	}
	zones.files = make(map[string]*zip.File, len(r.File))
	for _, f := range r.File {
		if !strings.HasSuffix(f.Name, "/") {
			zones.files[f.Name] = f
		}
	}
	zones.loaded = make(map[string]*time.Location)
}

// zoneNameProblem checks the shape of a zone name without the database, so
// that Decode (which the replicated state machine may call) does not depend
// on which zones the database holds.
func zoneNameProblem(name string) string {
	switch {
	case name == "":
		return "must name an IANA time zone such as Europe/Berlin"
	case name == "Local":
		return `"Local" would be the host's zone; name an IANA zone such as Europe/Berlin`
	case len(name) > maxZoneNameLen:
		return fmt.Sprintf("longer than %d bytes", maxZoneNameLen)
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, ".."):
		return fmt.Sprintf("%q is not an IANA zone name", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == '_' || c == '-' || c == '+') {
			return fmt.Sprintf("character %q not allowed in a zone name", c)
		}
	}
	return ""
}

// civil is a local wall-clock time with whole seconds, as RFC 5545 writes
// DTSTART;TZID=...: a date and a time of day with no offset.
type civil struct {
	year                int
	month               time.Month
	day, hour, min, sec int
}

// civilOf returns the wall clock of t (t's location is ignored: the
// fields are read as written).
func civilOf(t time.Time) civil {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return civil{y, mo, d, h, mi, s}
}

// floating is c as a time.Time in UTC: a zone-free carrier for calendar
// arithmetic (UTC has no transitions, so adding days never shifts the
// clock).
func (c civil) floating() time.Time {
	return time.Date(c.year, c.month, c.day, c.hour, c.min, c.sec, 0, time.UTC)
}

// String is the RFC 5545 local form, e.g. 20261130T090000.
func (c civil) String() string {
	return fmt.Sprintf("%04d%02d%02dT%02d%02d%02d", c.year, int(c.month), c.day, c.hour, c.min, c.sec)
}

// parseCivil reads the RFC 5545 local form YYYYMMDDTHHMMSS and refuses
// dates that do not exist (20260230T...) rather than normalising them.
func parseCivil(s string) (civil, error) {
	t, err := time.Parse("20060102T150405", s)
	if err != nil {
		return civil{}, fmt.Errorf("%q is not a local date-time YYYYMMDDTHHMMSS", s)
	}
	return civilOf(t), nil
}

// instant resolves the wall clock w in loc to Unix milliseconds by the rule
// of RFC 5545 §3.3.5, which §3.3.10 applies to every recurrence instance:
//
//   - a wall time that occurs twice (the clock is set back) means its
//     first occurrence, the one with the earlier instant;
//   - a wall time that does not occur (the clock jumps forward) is read
//     with the UTC offset in force before the gap, so 02:30 on the day
//     Europe/Berlin jumps from 02:00 to 03:00 is 03:30 CEST.
//
// time.Date is not used: for an ambiguous wall time it picks one of the
// two instants without saying which (zones east of UTC get the second,
// zones west of it the first), and replicas of the same series must not
// depend on that.
func instant(w time.Time, loc *time.Location) int64 {
	wall := w.Unix() // the wall clock read as if it were UTC
	if loc == time.UTC {
		return wall * 1000
	}
	// The zones in force within two days either side of the wall time
	// (transitions are rarer than that, and no offset change exceeds a
	// day: Pacific/Apia skipped 30 December 2011, the largest on record).
	const span = 2 * 86400
	type zone struct{ offset, start, end int64 }
	var seen [8]zone
	n := 0
	t := time.Unix(wall-span, 0).In(loc)
	for n < len(seen) {
		_, off := t.Zone()
		start, end := t.ZoneBounds()
		z := zone{offset: int64(off), start: minInt64, end: maxInt64}
		if !start.IsZero() {
			z.start = start.Unix()
		}
		if !end.IsZero() {
			z.end = end.Unix()
		}
		seen[n] = z
		n++
		if end.IsZero() || z.end > wall+span {
			break
		}
		t = end.In(loc)
	}
	best, found := int64(0), false
	for _, z := range seen[:n] {
		u := wall - z.offset
		if z.start <= u && u < z.end && (!found || u < best) {
			best, found = u, true
		}
	}
	if found {
		return best * 1000
	}
	// A gap: the wall time lies between the end of one zone (read with its
	// offset) and the start of the next. Use the offset before the gap.
	for i := 0; i+1 < n; i++ {
		before, after := seen[i], seen[i+1]
		if before.end+before.offset <= wall && wall < after.start+after.offset {
			return (wall - before.offset) * 1000
		}
	}
	// Unreachable for real zone data; fall back on the first zone's offset
	// so the answer is still a pure function of the input.
	return (wall - seen[0].offset) * 1000
}

const (
	minInt64 = -1 << 63
	maxInt64 = 1<<63 - 1
)
