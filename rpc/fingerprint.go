package rpc

import (
	"crypto/sha256"

	"google.golang.org/protobuf/proto"
)

// fingerprint identifies what a caller sent: SHA-256 over the request's
// message name and its deterministic encoding without the
// idempotency_key field. It is taken from the request as received,
// before the edge fills in anything (not_before = now, a default TTL),
// so an honest retry — through this node or another, now or later —
// has the same fingerprint, and the same key sent with another request
// (another RPC, another id, another shape) has a different one.
func fingerprint(msg proto.Message) []byte {
	if msg == nil {
		return nil
	}
	m := proto.Clone(msg)
	r := m.ProtoReflect()
	if f := r.Descriptor().Fields().ByName("idempotency_key"); f != nil {
		r.Clear(f)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		// Every message that reached a handler was decoded, so it
		// encodes; no fingerprint then means no check, as before.
		return nil
	}
	h := sha256.New()
	h.Write([]byte(r.Descriptor().FullName()))
	h.Write([]byte{0})
	h.Write(b)
	return h.Sum(nil)
}
