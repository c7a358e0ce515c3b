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
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

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
// "shape.notBefor", like every other bad field. A value protojson
// refuses (a string for an amount, a Timestamp past 9999) is named the
// same way instead of failing the whole message without a field. Binary protobuf keeps
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
	desc := pm.ProtoReflect().Descriptor()
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, pm); err != nil {
		// A value of the wrong kind, or a Timestamp or Duration out of
		// range: name the field like any other bad one.
		if path := invalidJSONField(desc, b, ""); path != "" {
			proto.Reset(pm)
			markUnknown(pm, path, "not a valid value: "+protojsonReason(err))
			return nil
		}
		return fmt.Errorf("unmarshal into %T: %w", m, err)
	}
	if path := unknownJSONField(desc, b, ""); path != "" {
		markUnknown(pm, path, unknownReason)
	}
	return nil
}

// unknownReason is the reason given for an unknown field.
const unknownReason = "unknown field (check its spelling; JSON names are camelCase or snake_case)"

// protojsonReason strips protojson's position prefix from err.
func protojsonReason(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "): "); i >= 0 {
		return msg[i+3:]
	}
	return strings.TrimPrefix(msg, "proto: ")
}

// invalidJSONField returns the path of the first member of the JSON
// object b, in document order, whose value protojson refuses for desc,
// or "" (recursing into message fields to name the innermost one).
func invalidJSONField(desc protoreflect.MessageDescriptor, b []byte, prefix string) string {
	var obj orderedObject
	if json.Unmarshal(b, &obj) != nil {
		return ""
	}
	opts := protojson.UnmarshalOptions{DiscardUnknown: true}
	for _, kv := range obj {
		one, err := json.Marshal(map[string]json.RawMessage{kv.key: kv.value})
		if err != nil {
			continue
		}
		if opts.Unmarshal(one, dynamicOf(desc)) == nil {
			continue
		}
		path := prefix + kv.key
		fd := desc.Fields().ByJSONName(kv.key)
		if fd == nil {
			fd = desc.Fields().ByName(protoreflect.Name(kv.key))
		}
		if fd == nil || fd.Message() == nil || strings.HasPrefix(string(fd.Message().FullName()), "google.protobuf.") {
			return path
		}
		switch {
		case fd.IsList():
			var items []json.RawMessage
			if json.Unmarshal(kv.value, &items) == nil {
				for i, it := range items {
					if p := invalidJSONField(fd.Message(), it, path+"["+strconv.Itoa(i)+"]."); p != "" {
						return p
					}
				}
			}
		case !fd.IsMap():
			if p := invalidJSONField(fd.Message(), kv.value, path+"."); p != "" {
				return p
			}
		}
		return path
	}
	return ""
}

// dynamicOf returns a new, empty message of desc's type.
func dynamicOf(desc protoreflect.MessageDescriptor) proto.Message {
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(desc.FullName()); err == nil {
		return mt.New().Interface()
	}
	return dynamicpb.NewMessage(desc)
}

// unknownMark is the field number of the mark: the highest a field may
// have, which no ledgerd message uses.
const unknownMark protowire.Number = protowire.MaxValidNumber

// markUnknown records path and why it is refused in m's unknown fields.
func markUnknown(m proto.Message, path, reason string) {
	r := m.ProtoReflect()
	u := protowire.AppendTag(r.GetUnknown(), unknownMark, protowire.BytesType)
	r.SetUnknown(protowire.AppendString(u, path+"\x00"+reason))
}

// unknownOf returns the field markUnknown recorded in m, if any.
func unknownOf(m any) (*ledger.FieldError, bool) {
	pm, ok := m.(proto.Message)
	if !ok || pm == nil {
		return nil, false
	}
	u := pm.ProtoReflect().GetUnknown()
	for len(u) > 0 {
		num, typ, n := protowire.ConsumeTag(u)
		if n < 0 {
			return nil, false
		}
		u = u[n:]
		if num == unknownMark && typ == protowire.BytesType {
			v, m := protowire.ConsumeString(u)
			if m < 0 {
				return nil, false
			}
			path, reason, _ := strings.Cut(v, "\x00")
			return &ledger.FieldError{Field: path, Reason: reason}, true
		}
		m := protowire.ConsumeFieldValue(num, typ, u)
		if m < 0 {
			return nil, false
		}
		u = u[m:]
	}
	return nil, false
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
