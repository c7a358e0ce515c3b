// Package strictjson decodes the one JSON object of a file people write
// by hand (the agent's config file, the tokens file) strictly: unknown
// keys, values of the wrong type and anything after the object are
// errors that name the key and say what it takes in words. It must not
// format messages for a particular file; its callers add the file's name
// and their hints.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// TypeError is a value of the wrong type. Key is its path ("a.b"; empty
// for the document itself), Type the Go type it should fill, Got what the
// document holds there (a JSON kind, or the value a custom decoder
// refused).
type TypeError struct {
	Key  string
	Type reflect.Type
	Got  string
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("key %q: want %s, got %s", e.Key, Want(e.Type), e.Got)
}

// UnknownKeyError is a key the target has no field for.
type UnknownKeyError struct{ Key string }

func (e *UnknownKeyError) Error() string { return fmt.Sprintf("unknown key %q", e.Key) }

// ErrTrailing means something follows the object.
var ErrTrailing = errors.New("trailing data after the JSON object")

// Decode decodes b, one JSON object, into v: a *TypeError, an
// *UnknownKeyError, ErrTrailing, or the decoder's syntax error.
func Decode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &TypeError{Key: te.Field, Type: te.Type, Got: te.Value}
		}
		if k, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return &UnknownKeyError{Key: strings.Trim(k, `"`)}
		}
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return ErrTrailing
	}
	return nil
}

// Want says in words what JSON value a field of type t takes.
func Want(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list of " + plural(Want(t.Elem()))
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return Want(t.Elem())
	}
	return t.String()
}

// plural turns the wants of Want into the plural after "a list of".
func plural(want string) string {
	switch want {
	case "a string":
		return "strings"
	case "an object":
		return "objects"
	case "an integer":
		return "integers"
	case "a number":
		return "numbers"
	}
	return want
}
