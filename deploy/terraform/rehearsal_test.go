package terraform_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRehearsal runs scripts/rehearsal.sh (three agents on 127.0.0.11-13
// from the rendered rehearsal configs: form, lose the leader, rolling
// restart) with the binary built from this tree. It binds fixed ports and
// takes about a minute, so it runs only with LEDGERD_REHEARSAL=1.
func TestRehearsal(t *testing.T) {
	if os.Getenv("LEDGERD_REHEARSAL") != "1" {
		t.Skip("set LEDGERD_REHEARSAL=1 to run the multi-host rehearsal")
	}
	script, err := filepath.Abs(filepath.Join(repoRoot, "scripts/rehearsal.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), "LEDGERD_BIN="+ledgerdBinary(t), "WORK="+t.TempDir())
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil || !strings.Contains(string(out), "PASS:") {
		t.Fatalf("rehearsal failed: %v", err)
	}
}
