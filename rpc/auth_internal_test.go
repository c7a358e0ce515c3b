package rpc

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestBearerSchemeIsCaseInsensitive: the scheme's name matches in any
// case (RFC 9110, section 11.1); anything but a bearer token is refused.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	auth, err := NewAuthenticator(AuthFile{Tokens: []TokenEntry{{Token: "abcdefghij", Tenant: "acme"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		header string
		ok     bool
	}{
		{"Bearer abcdefghij", true},
		{"bearer abcdefghij", true},
		{"BEARER  abcdefghij ", true},
		{"Basic abcdefghij", false},
		{"Bearerabcdefghij", false},
		{"abcdefghij", false},
		{"Bearer abcdefghi", false},
	} {
		h := http.Header{"Authorization": {tc.header}}
		p, err := auth.authenticate(h, "")
		if ok := err == nil && p.Tenant == "acme"; ok != tc.ok {
			t.Errorf("%q: principal %+v, error %v; want accepted %v", tc.header, p, err, tc.ok)
		}
		if err != nil && !errors.Is(err, errUnauthenticated) {
			t.Errorf("%q: error %v, want errUnauthenticated", tc.header, err)
		}
	}
}

// FuzzAuthFile: any bytes give an Authenticator or an error naming the
// file; in an accepted file every plain token authenticates as its entry's
// principal, presented as a bearer token, and every certificate common
// name as its entry's.
func FuzzAuthFile(f *testing.F) {
	for _, s := range []string{
		`{"tokens":[{"token":"s3cret-token","tenant":"acme"},{"token":"sha256:72399361da6a7754fec986dca5b7cbaf1c810a28ded4abaf56b2106d06cb78b0","tenant":"ops","operator":true}],"certs":[{"common_name":"broker-1","tenant":"acme"}]}`,
		`{"tokens":[{"token":"abcdefghij","tenant":"a"},{"token":"abcdefghij","tenant":"b"}]}`,
		`{"tokens":[{"token":" padded-token ","tenant":"a"}]}`,
		`{"certs":[{"common_name":"b","tenant":"a"},{"common_name":"b","tenant":"c"}]}`,
		`{"tokens":{}}`, `[]`, `{"tokens":[]} x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		auth, err := ParseAuthFile("f.json", b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "auth: tokens file f.json: ") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		var file AuthFile
		// The file decoded once already; decode it again to see its entries.
		if err := json.Unmarshal(b, &file); err != nil {
			t.Fatalf("accepted file does not decode: %v", err)
		}
		for i, e := range file.Tokens {
			if strings.HasPrefix(e.Token, "sha256:") {
				continue
			}
			p, err := auth.authenticate(http.Header{"Authorization": {"Bearer " + e.Token}}, "")
			if err != nil || p != (Principal{Tenant: e.Tenant, Operator: e.Operator}) {
				t.Fatalf("tokens[%d] %q: principal %+v, error %v; want tenant %q operator %v", i, e.Token, p, err, e.Tenant, e.Operator)
			}
		}
		for i, c := range file.Certs {
			p, err := auth.authenticate(http.Header{}, c.CommonName)
			if err != nil || p != (Principal{Tenant: c.Tenant, Operator: c.Operator}) {
				t.Fatalf("certs[%d] %q: principal %+v, error %v", i, c.CommonName, p, err)
			}
		}
	})
}
