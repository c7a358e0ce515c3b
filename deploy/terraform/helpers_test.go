package terraform_test

import (
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/agent/pki"
	"github.com/ledgerd/ledgerd/internal/testbin"
)

// repoRoot is the module root as seen from this package's directory.
const repoRoot = "../.."

// ledgerdBinary builds cmd/ledgerd from this tree once per test binary.
func ledgerdBinary(t *testing.T) string { return testbin.Ledgerd(t) }

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// terraformBinary returns $TERRAFORM or terraform from PATH, or skips.
func terraformBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TERRAFORM"); p != "" {
		return p
	}
	p, err := exec.LookPath("terraform")
	if err != nil {
		t.Skip("no terraform on PATH and $TERRAFORM unset")
	}
	return p
}

// testPKI is a throwaway CA and one server certificate signed by it with
// the server role (agent/pki, what `ledgerd tls` makes), valid for the
// rehearsal hosts.
type testPKI struct {
	caPEM, certPEM, keyPEM []byte
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	now := time.Now()
	ca, err := pki.NewCA("test ledgerd CA", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var ips []net.IP
	for _, a := range []string{"127.0.0.11", "127.0.0.12", "127.0.0.13"} {
		ips = append(ips, net.ParseIP(a))
	}
	cert, key, err := ca.Issue(pki.Request{Server: true, Name: "test-server", IPs: ips, Now: now, ValidFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return testPKI{caPEM: ca.CertPEM, certPEM: cert, keyPEM: key}
}
