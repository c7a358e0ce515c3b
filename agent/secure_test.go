package agent

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/agent/pki"
)

// testPKI is the material of one secured test cluster, made with the same
// package `ledgerd tls` uses.
type testPKI struct {
	dir           string
	ca            *pki.CA
	caFile        string
	gossipKey     string
	tokensFile    string
	operatorToken string
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.NewCA("test cluster", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{dir: dir, ca: ca, caFile: filepath.Join(dir, "ca.pem"), gossipKey: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", operatorToken: "ops-secret-token"}
	write(t, p.caFile, ca.CertPEM)
	p.tokensFile = filepath.Join(dir, "tokens.json")
	write(t, p.tokensFile, []byte(`{"tokens":[{"token":"`+p.operatorToken+`","tenant":"ops","operator":true}]}`))
	return p
}

func write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// issue writes a certificate and key and returns their files.
func (p *testPKI) issue(t testing.TB, server bool, name string) (certFile, keyFile string) {
	t.Helper()
	c, k, err := p.ca.Issue(pki.Request{Server: server, Name: name, Now: time.Now(), ValidFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(p.dir, name+".pem"), filepath.Join(p.dir, name+"-key.pem")
	write(t, certFile, c)
	write(t, keyFile, k)
	return certFile, keyFile
}

// serverArgs are the flags of a fully secured server named name.
func (p *testPKI) serverArgs(t testing.TB, name string) []string {
	cert, key := p.issue(t, true, name)
	return []string{
		"-tls-cert-file=" + cert, "-tls-key-file=" + key, "-tls-ca-file=" + p.caFile,
		"-tls-verify-incoming=true", "-tls-http=true", "-gossip-key=" + p.gossipKey, "-tokens-file=" + p.tokensFile,
	}
}

// TestSecureByDefault: a non-dev agent starts only when every listener
// authenticates its peers; each missing piece is named with the command
// that makes it; -insecure is the one way out; -dev stays on loopback.
func TestSecureByDefault(t *testing.T) {
	p := newTestPKI(t)
	secure := p.serverArgs(t, "s0")
	without := func(flag string) []string {
		var out []string
		for _, a := range secure {
			if a != flag && !strings.HasPrefix(a, flag+"=") && !(strings.HasSuffix(flag, "-") && strings.HasPrefix(a, flag)) {
				out = append(out, a)
			}
		}
		return out
	}
	base := []string{"-data-dir", t.TempDir()}
	for _, c := range []struct {
		name string
		args []string
		want string // "" = accepted
	}{
		{"everything set", secure, ""},
		{"nothing set", nil, "ledgerd tls ca create"},
		{"no certificates", without("-tls-"), "tls_cert_file, tls_key_file, tls_ca_file: required"},
		{"no verify incoming", append(without("-tls-verify-incoming"), "-tls-verify-incoming=false"), "tls_verify_incoming: must be true"},
		{"no http tls", without("-tls-http"), "tls_http: must be true"},
		{"no gossip key", without("-gossip-key"), "ledgerd keygen"},
		{"no tokens", without("-tokens-file"), "tokens_file: required"},
		{"nothing set but insecure", []string{"-insecure"}, ""},
		{"dev on every interface", []string{"-dev", "-http-addr", "0.0.0.0:7420"}, "stays on loopback"},
		{"dev advertising elsewhere", []string{"-dev", "-http-advertise", "10.0.0.1:7420"}, "stays on loopback"},
		{"dev on loopback", []string{"-dev", "-http-addr", "127.0.0.1:0"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(append([]string{}, base...), c.args...)
			_, _, err := ParseArgs(args, func(string) string { return "" }, io.Discard)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
			if c.name != "dev on every interface" && c.name != "dev advertising elsewhere" && !strings.Contains(err.Error(), "-insecure") {
				t.Errorf("the error does not name the way out: %v", err)
			}
		})
	}
}
