package agent

import (
	"io"
	"strings"
	"testing"
)

// TestTenantLimitsConfig: the tenant_limits key parses whole days and Go
// durations, and a bad entry is refused naming the entry and the key.
func TestTenantLimitsConfig(t *testing.T) {
	good := `{"data_dir":"d","tenant_limits":[{"tenant":"*","resource":"gpu","max_units":4,"max_unit_hours":500,"window":"30d",
		"approval":"required","approval_above_duration":"12h","approval_ttl":"3d"}]}`
	c, _, err := ParseArgs([]string{"-insecure", "-config", writeConfig(t, good)}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := c.TenantLimits[0].spec()
	if err != nil {
		t.Fatal(err)
	}
	day := int64(24 * 3_600_000)
	if sp.MaxUnits != 4 || sp.MaxUnitMillis != 500*3_600_000 || sp.Window != 30*day || !sp.ApprovalRequired ||
		sp.ApprovalAboveDuration != 12*3_600_000 || sp.ApprovalTTL != 3*day {
		t.Fatalf("spec %+v", sp)
	}
	for _, tc := range []struct{ name, entries, want string }{
		{"no tenant", `{"resource":"cpu"}`, "tenant_limits[0]: tenant and resource are required"},
		{"bad window", `{"tenant":"a","resource":"cpu","max_unit_hours":5,"window":"a month"}`, "tenant_limits[0]: window"},
		{"negative ttl", `{"tenant":"a","resource":"cpu","approval_ttl":"-1h"}`, "tenant_limits[0]: approval_ttl"},
		{"approval word", `{"tenant":"a","resource":"cpu","approval":"maybe"}`, "tenant_limits[0]: approval"},
		{"huge hours", `{"tenant":"a","resource":"cpu","max_unit_hours":9000000000000000,"window":"1d"}`, "tenant_limits[0]: max_unit_hours"},
		{"twice", `{"tenant":"a","resource":"cpu"},{"tenant":"a","resource":"cpu","max_units":2}`, "tenant_limits[1]: a/cpu given twice"},
		{"unknown key", `{"tenant":"a","resource":"cpu","max_cores":2}`, `"max_cores"`},
		// What the state machine would refuse when a leader seeds the
		// entry is refused at start, in the entry's own key names.
		{"negative units", `{"tenant":"a","resource":"cpu","max_units":-1}`, "tenant_limits[0]: invalid max_units: must be >= 0"},
		{"negative threshold", `{"tenant":"a","resource":"cpu","approval_above_units":-3}`, "tenant_limits[0]: invalid approval_above_units: must be >= 0"},
		{"hours without window", `{"tenant":"a","resource":"cpu","max_unit_hours":5}`, "tenant_limits[0]: invalid window: max_unit_hours and window go together"},
		{"bad resource", `{"tenant":"a","resource":"c p u","max_units":1}`, "tenant_limits[0]: invalid resource: character ' ' not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := `{"data_dir":"d","tenant_limits":[` + tc.entries + `]}`
			_, _, err := ParseArgs([]string{"-insecure", "-config", writeConfig(t, file)}, func(string) string { return "" }, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
