package main

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgerd/ledgerd/agent/pki"
)

// TestTLSCommands makes a CA, a server and a client certificate with the
// CLI and checks what the files are, and that usage errors name the flag.
func TestTLSCommands(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, "tls", "ca", "create", "-dir", dir); code != exitOK {
		t.Fatalf("ca create: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "tls", "ca", "create", "-dir", dir); code != exitError || !strings.Contains(stderr, "exists") {
		t.Fatalf("second ca create: exit %d: %s (want a refusal to overwrite)", code, stderr)
	}
	ca, key := filepath.Join(dir, "ledgerd-ca.pem"), filepath.Join(dir, "ledgerd-ca-key.pem")
	code, stdout, stderr := runCLI(t, "tls", "cert", "create", "-server", "-node", "head-1", "-ip", "10.0.0.1", "-dns", "head-1.example", "-dir", dir, "-ca", ca, "-ca-key", key)
	if code != exitOK || !strings.Contains(stdout, "server-head-1.pem") {
		t.Fatalf("server cert: exit %d: %s%s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "tls", "cert", "create", "-client", "-name", "broker-1", "-dir", dir, "-ca", ca, "-ca-key", key); code != exitOK {
		t.Fatalf("client cert: exit %d: %s", code, stderr)
	}
	loaded, err := pki.LoadCA(ca, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file   string
		server bool
	}{{"server-head-1.pem", true}, {"client-broker-1.pem", false}} {
		b, err := os.ReadFile(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		cert := parsePEM(t, b)
		if pki.IsServer(cert) != c.server {
			t.Errorf("%s: server role %v, want %v", c.file, pki.IsServer(cert), c.server)
		}
		if err := cert.CheckSignatureFrom(loaded.Cert); err != nil {
			t.Errorf("%s: not signed by the CA: %v", c.file, err)
		}
		if fi, _ := os.Stat(filepath.Join(dir, strings.TrimSuffix(c.file, ".pem")+"-key.pem")); fi == nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: key file missing or not 0600", c.file)
		}
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"tls", "cert", "create", "-node", "x"}, "exactly one of -server and -client"},
		{[]string{"tls", "cert", "create", "-server"}, "-node"},
		{[]string{"tls", "cert", "create", "-client"}, "-name"},
		{[]string{"tls", "cert", "create", "-client", "-name", "b", "-ip", "1.2.3.4"}, "client certificates carry no addresses"},
		{[]string{"tls", "cert", "create", "-server", "-node", "n", "-ip", "nope"}, `"nope" is not an IP address`},
		{[]string{"tls", "ca", "create", "-days", "0"}, "-days must be between 1 and 36500, got 0"},
		{[]string{"tls", "ca", "create", "-days", "1000000"}, "-days must be between 1 and 36500, got 1000000"},
		{[]string{"tls", "cert", "create", "-server", "-node", "n", "-days", "1000000"}, "-days must be between 1 and 36500, got 1000000"},
		{[]string{"tls", "bogus"}, "Usage"},
	} {
		code, _, stderr := runCLI(t, bad.args...)
		if code != exitUsage || !strings.Contains(stderr, bad.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %q", bad.args, code, stderr, exitUsage, bad.want)
		}
	}
	if code, _, stderr := runCLI(t, "tls", "cert", "create", "-client", "-name", "b", "-dir", dir, "-ca", filepath.Join(dir, "nope.pem"), "-ca-key", key); code != exitError || !strings.Contains(stderr, "ledgerd tls ca create") {
		t.Errorf("missing CA: exit %d: %s", code, stderr)
	}
}

func TestKeygen(t *testing.T) {
	code, a, _ := runCLI(t, "keygen")
	_, b, _ := runCLI(t, "keygen")
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(a))
	if code != exitOK || err != nil || len(k) != 32 {
		t.Fatalf("keygen: exit %d, %q: %v (%d bytes)", code, a, err, len(k))
	}
	if a == b {
		t.Fatal("two keygen runs printed the same key")
	}
}

func parsePEM(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMembersShowsInsecure: a server started with -insecure announces it,
// and `ledgerd members` marks it and warns.
func TestMembersShowsInsecure(t *testing.T) {
	a, _ := startAgent(t, "-insecure")
	code, stdout, stderr := runCLI(t, "members", "-addr", a.Addr())
	if code != exitOK || !strings.Contains(stdout, "alive,INSECURE") || !strings.Contains(stderr, "WARNING") {
		t.Fatalf("members of an insecure agent: exit %d\n%s%s", code, stdout, stderr)
	}
	b, _, _ := runDevAgent(t)
	code, stdout, stderr = runCLI(t, "members", "-addr", b.Addr())
	if code != exitOK || strings.Contains(stdout, "INSECURE") || strings.Contains(stderr, "WARNING") {
		t.Fatalf("members of a dev agent without -insecure: exit %d\n%s%s", code, stdout, stderr)
	}
}
