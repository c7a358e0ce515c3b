package fsm

import (
	"flag"
	"os"
	"testing"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// TestMain runs every test of the package with the hand-written codecs
// checked against the generic one (see verifyCodec), and benchmarks
// without the checks, which would cost what the codecs save.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		verifyCodec = true
	}
	os.Exit(m.Run())
}

// TestCodecChecksOn: the checks are on in tests, and they catch a
// difference.
func TestCodecChecksOn(t *testing.T) {
	if !verifyCodec {
		t.Fatal("verifyCodec is off: the tests do not check the codecs")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("verifyRow accepted a wrong encoding")
		}
	}()
	verifyRow(&fsmv1.Reservation{Id: "a"}, []byte{0x0a, 0x01, 'b'})
}
