package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ledgerd/ledgerd/ledger"
)

// StrictJSON returns the handler options that make the JSON codecs
// ("json" and "json; charset=utf-8") refuse unknown fields: a typo such
// as notBefor must not be dropped silently and the request booked at
// "now". Connect's own JSON codec discards them, and an error from a
// codec reaches the client without details, so the codec here decodes
// as Connect's does, then marks the message with the first unknown
// field's path (see unknownMark), and the leaderHint interceptor — which
// every service is mounted with — refuses a marked request with
// InvalidArgument and a BadRequest naming that path, e.g.
// "shape.notBefor", like every other bad field. Binary protobuf keeps
// ignoring unknown fields (a newer client's), as the wire format
// intends. Mount installs these options.
func StrictJSON() []connect.HandlerOption {
	return []connect.HandlerOption{
		connect.WithCodec(strictJSON{name: "json"}),
		connect.WithCodec(strictJSON{name: "json; charset=utf-8"}),
	}
}

// strictJSON is protojson with unknown fields marked (see StrictJSON).
type strictJSON struct{ name string }

var _ connect.Codec = strictJSON{}

// Name implements connect.Codec.
func (c strictJSON) Name() string { return c.name }

// Marshal implements connect.Codec.
func (c strictJSON) Marshal(m any) ([]byte, error) {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("marshal %T: not a protobuf message", m)
	}
	return protojson.Marshal(pm)
}

// Unmarshal implements connect.Codec.
func (c strictJSON) Unmarshal(b []byte, m any) error {
	pm, ok := m.(proto.Message)
	if !ok {
		return fmt.Errorf("unmarshal into %T: not a protobuf message", m)
	}
	if len(b) == 0 {
		return errors.New("zero-length payload is not a valid JSON object")
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, pm); err != nil {
		return fmt.Errorf("unmarshal into %T: %w", m, err)
	}
	if path := unknownJSONField(pm.ProtoReflect().Descriptor(), b, ""); path != "" {
		markUnknown(pm, path)
	}
	return nil
}

// unknownMark is the field number of the mark: the highest a field may
// have, which no ledgerd message uses.
const unknownMark protowire.Number = protowire.MaxValidNumber

// markUnknown records path in m's unknown fields.
func markUnknown(m proto.Message, path string) {
	r := m.ProtoReflect()
	u := protowire.AppendTag(r.GetUnknown(), unknownMark, protowire.BytesType)
	r.SetUnknown(protowire.AppendString(u, path))
}

// unknownOf returns the path markUnknown recorded in m, if any.
func unknownOf(m any) (string, bool) {
	pm, ok := m.(proto.Message)
	if !ok || pm == nil {
		return "", false
	}
	u := pm.ProtoReflect().GetUnknown()
	for len(u) > 0 {
		num, typ, n := protowire.ConsumeTag(u)
		if n < 0 {
			return "", false
		}
		u = u[n:]
		if num == unknownMark && typ == protowire.BytesType {
			v, m := protowire.ConsumeString(u)
			if m < 0 {
				return "", false
			}
			return v, true
		}
		m := protowire.ConsumeFieldValue(num, typ, u)
		if m < 0 {
			return "", false
		}
		u = u[m:]
	}
	return "", false
}

// unknownFieldErr is the error of a request with an unknown field.
func unknownFieldErr(path string) *connect.Error {
	return fieldErr(&ledger.FieldError{Field: path, Reason: "unknown field (check its spelling; JSON names are camelCase or snake_case)"})
}

// unknownJSONField returns the path of the first key of the JSON object
// b, in document order, that names no field of desc (recursively through
// message fields, repeated messages and maps of messages), or "". Keys
// may be the JSON name or the proto name. Well-known types (Timestamp,
// Duration, ...) are protojson's to check.
func unknownJSONField(desc protoreflect.MessageDescriptor, b []byte, prefix string) string {
	if strings.HasPrefix(string(desc.FullName()), "google.protobuf.") {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var obj orderedObject
	if err := dec.Decode(&obj); err != nil {
		return ""
	}
	for _, kv := range obj {
		fd := desc.Fields().ByJSONName(kv.key)
		if fd == nil {
			fd = desc.Fields().ByName(protoreflect.Name(kv.key))
		}
		path := prefix + kv.key
		if fd == nil {
			return path
		}
		if fd.Message() == nil {
			continue
		}
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() == nil {
				continue
			}
			var entries orderedObject
			if json.Unmarshal(kv.value, &entries) != nil {
				continue
			}
			for _, e := range entries {
				if p := unknownJSONField(fd.MapValue().Message(), e.value, fmt.Sprintf("%s[%q].", path, e.key)); p != "" {
					return p
				}
			}
		case fd.IsList():
			var items []json.RawMessage
			if json.Unmarshal(kv.value, &items) != nil {
				continue
			}
			for i, it := range items {
				if p := unknownJSONField(fd.Message(), it, path+"["+strconv.Itoa(i)+"]."); p != "" {
					return p
				}
			}
		default:
			if p := unknownJSONField(fd.Message(), kv.value, path+"."); p != "" {
				return p
			}
		}
	}
	return ""
}

// orderedObject is a JSON object's members in document order.
type orderedObject []struct {
	key   string
	value json.RawMessage
}

// UnmarshalJSON implements json.Unmarshaler; anything but an object
// decodes to no members.
func (o *orderedObject) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		*o = append(*o, struct {
			key   string
			value json.RawMessage
		}{key, v})
	}
	return nil
}
