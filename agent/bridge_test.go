package agent

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestSlurmBridgeConfig: the slurm_bridge key parses from the config file
// and bad values are refused naming the key.
func TestSlurmBridgeConfig(t *testing.T) {
	good := `{"data_dir":"d","slurm_bridge":{"resource":"batch","partition":"debug","horizon":"48h",
		"tenant_map":{"physics":{"users":["alice"],"accounts":["phys"]},"*":{"accounts":["guest"]}},"zone":"Europe/Berlin","user":"slurm"}}`
	cfg, _, err := ParseArgs([]string{"-insecure", "-config", writeConfig(t, good)}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.SlurmBridge
	if b == nil || b.Resource != "batch" || time.Duration(b.Horizon) != 48*time.Hour || b.TenantMap["physics"].Accounts[0] != "phys" {
		t.Fatalf("parsed %+v", b)
	}
	if fc := b.followConfig(); fc.Prefix != "ledgerd-" {
		t.Errorf("default prefix %q", fc.Prefix)
	}
	for _, tc := range []struct{ file, want string }{
		{`{"data_dir":"d","slurm_bridge":{}}`, "slurm_bridge.resource"},
		{`{"data_dir":"d","slurm_bridge":{"resource":"b","prefix":"a,b"}}`, "slurm_bridge.prefix"},
		{`{"data_dir":"d","slurm_bridge":{"resource":"b","zone":"Mars/Olympus"}}`, "slurm_bridge.zone"},
		{`{"data_dir":"d","slurm_bridge":{"resource":"b","tenant_map":{"t":{}}}}`, "slurm_bridge.tenant_map"},
		{`{"data_dir":"d","slurm_bridge":{"resource":"b","horizn":"1h"}}`, "horizn"},
		{`{"data_dir":"d","slurm_bridge":{"resource":"b","interval":"1ns"}}`, "slurm_bridge.interval: must be at least 100ms (each round runs scontrol and sinfo), got 1ns"},
		{`{"data_dir":"d","slurm_bridge":{"resource":"b","interval":"-5s"}}`, "slurm_bridge.interval: must be at least 100ms"},
	} {
		_, _, err := ParseArgs([]string{"-insecure", "-config", writeConfig(t, tc.file)}, func(string) string { return "" }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.file, err, tc.want)
		}
	}
}
