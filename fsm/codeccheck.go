package fsm

import (
	"bytes"
	"fmt"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
	"google.golang.org/protobuf/proto"
)

// verifyCodec makes every row encoding and decoding, every result
// encoding and every command decoding of the hand-written codecs
// (rowcodec.go, cmdcodec.go, encodeResult) check itself against the
// generic protobuf codec, and panic on any difference. The package's
// tests set it (codeccheck_test.go), so that every entry any test
// applies — the golden logs, the property and lifecycle tests, the fuzz
// targets — holds the codecs to the generic one on real traffic. It is
// never set in a server: the checks cost what the codecs save.
var verifyCodec = false

// verifyRow panics unless row is the generic deterministic encoding of r.
func verifyRow(r *fsmv1.Reservation, row []byte) {
	want, err := marshalOpts.Marshal(r)
	if err != nil || !bytes.Equal(want, row) {
		panic(fmt.Sprintf("fsm: row codec wrote %x, the generic encoder %x (%v) for %v", row, want, err, r))
	}
}

// verifyDecodedRow panics unless r is what the generic decoder reads from
// row.
func verifyDecodedRow(row string, r *fsmv1.Reservation) {
	want := new(fsmv1.Reservation)
	if err := proto.Unmarshal([]byte(row), want); err != nil || !proto.Equal(want, r) {
		panic(fmt.Sprintf("fsm: row codec read %v, the generic decoder %v (%v) from %x", r, want, err, row))
	}
}

// verifyResult panics unless b is the generic deterministic encoding of r.
func verifyResult(r *fsmv1.Result, b []byte) {
	want, err := marshalOpts.Marshal(r)
	if err != nil || !bytes.Equal(want, b) {
		panic(fmt.Sprintf("fsm: result encoded as %x, the generic encoder %x (%v) for %v", b, want, err, r))
	}
}

// verifyCommand panics unless c is what the generic decoder reads from b.
func verifyCommand(b []byte, c *fsmv1.Command) {
	want := new(fsmv1.Command)
	if err := proto.Unmarshal(b, want); err != nil || !proto.Equal(want, c) {
		panic(fmt.Sprintf("fsm: command codec read %v, the generic decoder %v (%v) from %x", c, want, err, b))
	}
}

// verifyMeta panics unless m is the rowMeta scanRow reads from row.
// verifyScan checks that sc's bookkeeping fields, owner and parts
// (resource and amount) are what scanRow reads from row.
func verifyScan(row string, sc *rowScan) {
	var want rowScan
	if err := scanRow(row, &want); err != nil || want.rowMeta != sc.rowMeta || want.owner != sc.owner {
		panic(fmt.Sprintf("fsm: kept scan %+v, scanRow %+v (%v) from %x", *sc, want, err, row))
	}
	for _, ps := range [2][2][]scanPart{{sc.parts, want.parts}, {sc.pendParts, want.pendParts}} {
		if len(ps[0]) != len(ps[1]) {
			panic(fmt.Sprintf("fsm: kept %d parts, scanRow %d from %x", len(ps[0]), len(ps[1]), row))
		}
		for i := range ps[0] {
			if ps[0][i].resource != ps[1][i].resource || ps[0][i].amount != ps[1][i].amount {
				panic(fmt.Sprintf("fsm: kept part %+v, scanRow %+v from %x", ps[0][i], ps[1][i], row))
			}
		}
	}
}

func verifyMeta(row string, m rowMeta) {
	var sc rowScan
	if err := scanRow(row, &sc); err != nil || sc.rowMeta != m {
		panic(fmt.Sprintf("fsm: scanMeta read %+v, scanRow %+v (%v) from %x", m, sc.rowMeta, err, row))
	}
}
