package fsm

import (
	"fmt"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// Applied is what Apply and ApplyBatch return for one applied command:
// the encoded Result (what a forwarded caller receives and what the
// idempotency record stores) and the Result message it encodes. The
// leader that proposed the command reads the message instead of decoding
// the bytes it was just made from; a follower drops both.
//
// The message shares reservation rows with the state machine (and its
// event history), which never changes a row once it is stored: callers
// must only read it.
type Applied struct {
	enc []byte
	res *fsmv1.Result
}

// EncodedResult returns the deterministic encoding of the Result, the
// bytes DecodeResult reads.
func (a *Applied) EncodedResult() []byte { return a.enc }

// Result returns the Result message EncodedResult encodes. It must not
// be modified.
func (a *Applied) Result() *fsmv1.Result { return a.res }

// newApplied pairs res with its encoding enc.
func newApplied(res *fsmv1.Result, enc []byte) *Applied {
	return &Applied{enc: enc, res: res}
}

// ResultOf returns the Result of an applied command from what the log
// handed back: the message itself when v is the *Applied this process's
// FSM returned for it (the command was applied here), else the decoding
// of enc (a command forwarded to and applied by another server). Like
// DecodeResult, it refuses a result without a status.
func ResultOf(v any, enc []byte) (*fsmv1.Result, error) {
	a, ok := v.(*Applied)
	if !ok || a == nil || a.res == nil {
		return DecodeResult(enc)
	}
	if a.res.GetStatus() == fsmv1.Result_STATUS_UNKNOWN {
		return nil, fmt.Errorf("decode result: missing status")
	}
	return a.res, nil
}
