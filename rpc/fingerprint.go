package rpc

import (
	"crypto/sha256"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// fingerprint identifies what a caller sent: SHA-256 over the request's
// message name and its deterministic encoding without the
// idempotency_key field. It is taken from the request as received,
// before the edge fills in anything (not_before = now, a default TTL),
// so an honest retry — through this node or another, now or later —
// has the same fingerprint, and the same key sent with another request
// (another RPC, another id, another shape) has a different one.
//
// The fingerprint is stored in the log and compared across releases, so
// its bytes are fixed: those of cloning the message, clearing the key
// and encoding the clone deterministically (fingerprintReference in the
// tests). It is computed without the clone: the message is encoded as it
// is and the key's field is left out of the hash. Generated messages
// encode their fields in field-number order and the key is a top-level
// string, so its tag, length and bytes form one top-level field of the
// encoding, and the encoding without it is the rest, byte for byte.
func fingerprint(msg proto.Message) []byte {
	if msg == nil {
		return nil
	}
	desc := msg.ProtoReflect().Descriptor()
	key := protowire.Number(-1) // no field has it
	if f := desc.Fields().ByName("idempotency_key"); f != nil {
		key = f.Number()
	}
	bp := fpBufs.Get().(*[]byte)
	b, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend((*bp)[:0], msg)
	defer func() {
		if cap(b) <= maxPooledFP {
			*bp = b[:0]
			fpBufs.Put(bp)
		}
	}()
	if err != nil {
		// Every message that reached a handler was decoded, so it
		// encodes; no fingerprint then means no check, as before.
		return nil
	}
	h := sha256.New()
	h.Write([]byte(desc.FullName()))
	h.Write([]byte{0})
	// Hash the encoding around the key's field: the runs before and
	// after it (hashing is streaming, so where the writes split does not
	// matter).
	start := 0
	for off := 0; off < len(b); {
		num, typ, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			return nil
		}
		m := protowire.ConsumeFieldValue(num, typ, b[off+n:])
		if m < 0 {
			return nil
		}
		// A field with the key's number but another wire type is not the
		// key: it was decoded as an unknown field and stays in the hash.
		if num == key && typ == protowire.BytesType {
			h.Write(b[start:off])
			start = off + n + m
		}
		off += n + m
	}
	h.Write(b[start:])
	return h.Sum(nil)
}

// fpBufs holds encoding buffers for fingerprint; one that grew past
// maxPooledFP (a rare, large request) is not kept.
const maxPooledFP = 64 << 10

var fpBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}
