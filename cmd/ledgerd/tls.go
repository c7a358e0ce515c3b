package main

import (
	"crypto/rand"
	"encoding/base64"
	"flag"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/ledgerd/ledgerd/agent/pki"
)

func init() {
	register("tls", "Make the cluster's TLS material: a CA, server and client certificates", runTLS)
	register("keygen", "Print a new gossip encryption key (gossip_key)", runKeygen)
}

const tlsUsage = `Usage: ledgerd tls ca create [options]
       ledgerd tls cert create -server -node NAME [-ip IP,...] [-dns NAME,...] [options]
       ledgerd tls cert create -client -name NAME [options]

Makes the files a secure cluster needs (see docs/operations.md, "Securing a
cluster"): one CA per cluster; for every server a certificate that carries
the server role (servers accept only peers holding one, on Raft and on the
internal endpoints); for API clients certificates without it. Keys are
ECDSA P-256, written with mode 0600; existing files are never overwritten.
`

func runTLS(args []string) int {
	if len(args) < 2 || args[1] != "create" || (args[0] != "ca" && args[0] != "cert") {
		fmt.Fprint(cliErr, tlsUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			return exitOK
		}
		return exitUsage
	}
	if args[0] == "ca" {
		return runCACreate(args[2:])
	}
	return runCertCreate(args[2:])
}

// maxCertDays is the longest validity -days takes: a hundred years, well
// inside what a time.Duration holds (about 292), so that the validity
// cannot wrap around to a negative one.
const maxCertDays = 100 * 365

// checkDays checks a -days value.
func checkDays(days int) error {
	if days <= 0 || days > maxCertDays {
		return fmt.Errorf("-days must be between 1 and %d, got %d", maxCertDays, days)
	}
	return nil
}

func runCACreate(args []string) int {
	fs := flag.NewFlagSet("tls ca create", flag.ContinueOnError)
	fs.SetOutput(cliErr)
	dir := fs.String("dir", ".", "directory to write ledgerd-ca.pem and ledgerd-ca-key.pem into")
	name := fs.String("name", "ledgerd cluster CA", "the CA's common name")
	days := fs.Int("days", 5*365, "days the CA is valid")
	fs.Usage = func() { fmt.Fprint(cliErr, tlsUsage+"\nOptions of ca create:\n"); fs.PrintDefaults() }
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	if err := checkDays(*days); err != nil {
		return usageErr(fs, "%v", err)
	}
	ca, err := pki.NewCA(*name, time.Now(), time.Duration(*days)*24*time.Hour)
	if err != nil {
		return fail("tls ca create", err)
	}
	certFile, keyFile := filepath.Join(*dir, "ledgerd-ca.pem"), filepath.Join(*dir, "ledgerd-ca-key.pem")
	if err := pki.WriteNew(certFile, ca.CertPEM, 0o644); err != nil {
		return fail("tls ca create", err)
	}
	if err := pki.WriteNew(keyFile, ca.KeyPEM, 0o600); err != nil {
		return fail("tls ca create", err)
	}
	fmt.Fprintf(cliOut, "wrote %s (give it to every server and client: tls_ca_file)\nwrote %s (keep it off the servers; it signs new certificates)\n", certFile, keyFile)
	return exitOK
}

func runCertCreate(args []string) int {
	fs := flag.NewFlagSet("tls cert create", flag.ContinueOnError)
	fs.SetOutput(cliErr)
	server := fs.Bool("server", false, "a server certificate (carries the server role)")
	client := fs.Bool("client", false, "a client certificate (API callers; no server role)")
	node := fs.String("node", "", "the server's node name (with -server)")
	name := fs.String("name", "", "the client's name, mapped to a tenant by the tokens file's certs (with -client)")
	ips := fs.String("ip", "", "comma-separated IP addresses peers and clients dial the server at (with -server)")
	dnsNames := fs.String("dns", "", "comma-separated DNS names of the server (with -server)")
	dir := fs.String("dir", ".", "directory to write the certificate and key into")
	caFile := fs.String("ca", "ledgerd-ca.pem", "the CA certificate")
	caKey := fs.String("ca-key", "ledgerd-ca-key.pem", "the CA key")
	days := fs.Int("days", 365, "days the certificate is valid (at most as long as the CA)")
	fs.Usage = func() { fmt.Fprint(cliErr, tlsUsage+"\nOptions of cert create:\n"); fs.PrintDefaults() }
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *server == *client {
		return usageErr(fs, "give exactly one of -server and -client")
	}
	if err := checkDays(*days); err != nil {
		return usageErr(fs, "%v", err)
	}
	req := pki.Request{Server: *server, Now: time.Now(), ValidFor: time.Duration(*days) * 24 * time.Hour}
	var base string
	if *server {
		if *node == "" {
			return usageErr(fs, "-server needs -node NAME")
		}
		if *name != "" {
			return usageErr(fs, "-name is for -client; a server is named by -node")
		}
		req.Name, base = *node, "server-"+*node
		for _, s := range splitList(*ips) {
			ip := net.ParseIP(s)
			if ip == nil {
				return usageErr(fs, "-ip: %q is not an IP address", s)
			}
			req.IPs = append(req.IPs, ip)
		}
		req.DNSNames = splitList(*dnsNames)
	} else {
		if *name == "" {
			return usageErr(fs, "-client needs -name NAME")
		}
		if *node != "" || *ips != "" || *dnsNames != "" {
			return usageErr(fs, "-node, -ip and -dns are for -server; client certificates carry no addresses")
		}
		req.Name, base = *name, "client-"+*name
	}
	if strings.ContainsAny(req.Name, `/\`) {
		return usageErr(fs, "name %q must not contain a path separator", req.Name)
	}
	ca, err := pki.LoadCA(*caFile, *caKey)
	if err != nil {
		return fail("tls cert create", fmt.Errorf("%w (make one with `ledgerd tls ca create`)", err))
	}
	certPEM, keyPEM, err := ca.Issue(req)
	if err != nil {
		return fail("tls cert create", err)
	}
	certFile, keyFile := filepath.Join(*dir, base+".pem"), filepath.Join(*dir, base+"-key.pem")
	if err := pki.WriteNew(certFile, certPEM, 0o644); err != nil {
		return fail("tls cert create", err)
	}
	if err := pki.WriteNew(keyFile, keyPEM, 0o600); err != nil {
		return fail("tls cert create", err)
	}
	if *server {
		fmt.Fprintf(cliOut, "wrote %s and %s: tls_cert_file and tls_key_file of server %s\n", certFile, keyFile, req.Name)
	} else {
		fmt.Fprintf(cliOut, "wrote %s and %s: the client certificate of %s (ledgerd -cert-file/-key-file)\n", certFile, keyFile, req.Name)
	}
	return exitOK
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func runKeygen(args []string) int {
	fs := flag.NewFlagSet("keygen", flag.ContinueOnError)
	fs.SetOutput(cliErr)
	fs.Usage = func() {
		fmt.Fprint(cliErr, "Usage: ledgerd keygen\n\nPrints a new 32-byte gossip encryption key, base64: the gossip_key of every server.\n")
	}
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	var k [32]byte
	if _, err := rand.Read(k[:]); err != nil {
		return fail("keygen", err)
	}
	fmt.Fprintln(cliOut, base64.StdEncoding.EncodeToString(k[:]))
	return exitOK
}
