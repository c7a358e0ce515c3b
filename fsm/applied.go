package fsm

import (
	"fmt"
	"sync"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// Applied is what Apply and ApplyBatch return for one applied command:
// the encoded Result (what a forwarded caller receives and what the
// idempotency record stores) and the Result message it encodes. The
// leader that proposed the command reads the message instead of decoding
// the bytes it was just made from; a follower drops both.
//
// The encoding is made when it is first asked for (EncodedResult or
// Result), on the caller's goroutine, unless the command had an
// idempotency key (its record stores the bytes, so apply made them).
// Nobody asks for the result of an entry raft applies without a waiting
// caller (a follower's entries, a restarting node's log tail), so those
// are never encoded. The bytes are the same whenever they are made: the
// message and the stored row it shares are not changed after apply.
//
// The message shares reservation rows with the state machine (and its
// event history), which never changes a row once it is stored: callers
// must only read it.
type Applied struct {
	once sync.Once
	enc  []byte
	res  *fsmv1.Result
	// known and row are the state's lastPut and lastRow when the command
	// was applied: the stored row message and its encoding, which the
	// result's encoding reuses (encodeResultRow).
	known *fsmv1.Reservation
	row   string
}

// EncodedResult returns the deterministic encoding of the Result, the
// bytes DecodeResult reads.
func (a *Applied) EncodedResult() []byte {
	a.once.Do(a.encode)
	return a.enc
}

// Result returns the Result message EncodedResult encodes. It must not
// be modified.
func (a *Applied) Result() *fsmv1.Result {
	// The encoder briefly detaches the message's reservation: it runs
	// before the message is handed out.
	a.once.Do(a.encode)
	return a.res
}

func (a *Applied) encode() {
	if a.enc == nil {
		a.enc = encodeResultOf(a.res, a.known, a.row)
	}
	a.known, a.row = nil, ""
}

// newApplied pairs res with its encoding enc (nil: encoded when first
// asked for; known and row are then the state's lastPut and lastRow as
// the command left them).
func newApplied(res *fsmv1.Result, enc []byte, known *fsmv1.Reservation, row string) *Applied {
	if enc != nil {
		known, row = nil, ""
	}
	return &Applied{enc: enc, res: res, known: known, row: row}
}

// ResultOf returns the Result of an applied command from what the log
// handed back: the message itself when v is the *Applied this process's
// FSM returned for it (the command was applied here), else the decoding
// of enc (a command forwarded to and applied by another server). Like
// DecodeResult, it refuses a result without a status.
func ResultOf(v any, enc []byte) (*fsmv1.Result, error) {
	a, ok := v.(*Applied)
	if !ok || a == nil || a.Result() == nil {
		return DecodeResult(enc)
	}
	res := a.Result()
	if res.GetStatus() == fsmv1.Result_STATUS_UNKNOWN {
		return nil, fmt.Errorf("decode result: missing status")
	}
	return res, nil
}
