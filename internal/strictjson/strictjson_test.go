package strictjson

import (
	"errors"
	"reflect"
	"testing"
)

type inner struct {
	N int `json:"n"`
}

type doc struct {
	Name  string            `json:"name"`
	On    bool              `json:"on"`
	Tags  []string          `json:"tags"`
	Inner *inner            `json:"inner"`
	Map   map[string]string `json:"map"`
}

// TestDecode: each kind of problem comes back as its own error, naming
// the key path, and a good document decodes.
func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // the error's text; "" = decodes
	}{
		{`{"name":"a","inner":{"n":2}}`, ""},
		{`{"name":5}`, `key "name": want a string, got number`},
		{`{"tags":"a"}`, `key "tags": want a list of strings, got string`},
		{`{"inner":{"n":"x"}}`, `key "inner.n": want an integer, got string`},
		{`{"map":[1]}`, `key "map": want an object, got array`},
		{`{"on":1}`, `key "on": want true or false, got number`},
		{`[]`, `key "": want an object, got array`},
		{`{"nmae":"a"}`, `unknown key "nmae"`},
		{`{} {}`, ErrTrailing.Error()},
		{`{} ]`, ErrTrailing.Error()},
		{`{"name":`, "unexpected EOF"},
	} {
		var d doc
		err := Decode([]byte(tc.in), &d)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.want)
		}
	}
	var te *TypeError
	if err := Decode([]byte(`{"inner":{"n":true}}`), &doc{}); !errors.As(err, &te) || te.Key != "inner.n" || te.Type != reflect.TypeFor[int]() {
		t.Fatalf("type error %#v", err)
	}
	var uk *UnknownKeyError
	if err := Decode([]byte(`{"inner":{"m":1}}`), &doc{}); !errors.As(err, &uk) || uk.Key != "m" {
		t.Fatalf("unknown key error %#v", err)
	}
}
