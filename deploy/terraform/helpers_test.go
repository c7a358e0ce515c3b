package terraform_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/ledgerd/ledgerd/internal/testbin"
	"github.com/ledgerd/ledgerd/internal/testpki"
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

// testPKI is a throwaway CA and one server certificate signed by it, valid
// for the rehearsal hosts.
type testPKI struct {
	caPEM, certPEM, keyPEM []byte
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	ca := testpki.NewCA(t, "test ledgerd CA")
	leaf := ca.Issue(t, "server.ledgerd", testpki.Options{
		Hosts: []string{"localhost", "server.ledgerd", "127.0.0.1", "127.0.0.11", "127.0.0.12", "127.0.0.13"},
	})
	return testPKI{caPEM: ca.PEM, certPEM: leaf.CertPEM, keyPEM: leaf.KeyPEM}
}
