package series

import (
	"crypto/sha256"
	"encoding/hex"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestZoneinfoPinned: zoneinfo.zip is the archive TZDataVersion names.
func TestZoneinfoPinned(t *testing.T) {
	sum := sha256.Sum256(zoneinfo)
	if got := hex.EncodeToString(sum[:]); got != zoneinfoSHA256 {
		t.Fatalf("zoneinfo.zip sha256 %s, want %s: update TZDataVersion and zoneinfoSHA256 with the file", got, zoneinfoSHA256)
	}
	if _, err := LoadZone("Europe/Berlin"); err != nil {
		t.Fatal(err)
	}
}

// TestInstantRule pins the RFC 5545 §3.3.5 rule on its own examples and
// shows why time.Date is not used: for a wall time that exists twice it
// returns the first instant west of UTC and the second east of it.
func TestInstantRule(t *testing.T) {
	ny, _ := LoadZone("America/New_York")
	be, _ := LoadZone("Europe/Berlin")
	for _, c := range []struct {
		loc  *time.Location
		wall time.Time
		want string
	}{
		// The RFC's own two examples.
		{ny, time.Date(2007, 11, 4, 1, 30, 0, 0, time.UTC), "2007-11-04T01:30:00-04:00"},
		{ny, time.Date(2007, 3, 11, 2, 30, 0, 0, time.UTC), "2007-03-11T03:30:00-04:00"},
		{be, time.Date(2026, 10, 25, 2, 30, 0, 0, time.UTC), "2026-10-25T02:30:00+02:00"},
		{be, time.Date(2026, 3, 29, 2, 30, 0, 0, time.UTC), "2026-03-29T03:30:00+02:00"},
		{be, time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC), "2026-07-01T12:00:00+02:00"},
	} {
		want, _ := time.Parse(time.RFC3339, c.want)
		if got := instant(c.wall, c.loc); got != want.UnixMilli() {
			t.Errorf("instant(%v in %v) = %v, want %s", c.wall.Format("2006-01-02T15:04"), c.loc, time.UnixMilli(got).In(c.loc).Format(time.RFC3339), c.want)
		}
	}
	// What time.Date does with Berlin's repeated 02:30: the second one.
	td := time.Date(2026, 10, 25, 2, 30, 0, 0, be)
	if _, off := td.Zone(); off != 3600 {
		t.Logf("time.Date now picks offset %d for Berlin's repeated 02:30 (was +3600)", off)
	}
}

// TestTimeZoneAndZoneBounds covers a zone with a gap of a whole day
// (Pacific/Apia skipped 30 December 2011) and UTC.
func TestTimeZoneAndZoneBounds(t *testing.T) {
	apia, err := LoadZone("Pacific/Apia")
	if err != nil {
		t.Fatal(err)
	}
	// 30 December 2011 12:00 did not exist there: read with the offset
	// before (-10:00), it is 31 December 12:00 at +14:00.
	got := instant(time.Date(2011, 12, 30, 12, 0, 0, 0, time.UTC), apia)
	if want := time.Date(2011, 12, 30, 22, 0, 0, 0, time.UTC).UnixMilli(); got != want {
		t.Errorf("Apia 2011-12-30T12:00 = %v, want 2011-12-30T22:00Z", time.UnixMilli(got).UTC())
	}
	if got := instant(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.UTC); got != time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() {
		t.Errorf("UTC instant = %d", got)
	}
}

// TestSourceRules keeps the package's non-test files from reading a clock,
// the host's zone database or the host's zone, and from starting
// goroutines: expansion must be a function of the spec and the embedded
// zone data.
func TestSourceRules(t *testing.T) {
	forbidden := map[string]string{
		"time.Now":          "expansion takes now as an argument",
		"time.Since":        "expansion takes now as an argument",
		"time.LoadLocation": "zones come from the embedded zoneinfo.zip only",
		"time.Local":        "the host's zone must not matter",
		"os.Getenv":         "the environment must not matter",
		"rand.":             "no randomness",
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: goroutine at %s", name, fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok {
					full := id.Name + "." + n.Sel.Name
					for bad, why := range forbidden {
						if full == bad || strings.HasSuffix(bad, ".") && id.Name+"." == bad {
							t.Errorf("%s: %s at %s: %s", name, full, fset.Position(n.Pos()), why)
						}
					}
				}
			}
			return true
		})
	}
	if checked < 5 {
		t.Fatalf("checked only %d files", checked)
	}
}
