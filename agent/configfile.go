package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
)

// loadConfigFile reads a JSON config file into c (see decodeConfigFile).
func loadConfigFile(path string, c *Config) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return decodeConfigFile(path, b, c)
}

// decodeConfigFile decodes the config file name, whose bytes are b, over
// c: the keys it holds replace c's values, the others stay. Unknown keys,
// values of the wrong type and anything after the object are errors, and
// every error of a key's value names the key (nested keys with dots:
// "slurm_bridge.horizon") and says what it wants in words, not Go types.
func decodeConfigFile(name string, b []byte, c *Config) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field == "" {
				return fmt.Errorf("config %s: want a JSON object of settings, got %s", name, te.Value)
			}
			return fmt.Errorf("config %s: key %q: want %s, got %s", name, te.Field, jsonWant(te.Type), te.Value)
		}
		if k, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			if near := nearestKey(strings.Trim(k, `"`)); near != "" {
				return fmt.Errorf("config %s: unknown key %s (did you mean %q?)", name, k, near)
			}
			return fmt.Errorf("config %s: unknown key %s", name, k)
		}
		return fmt.Errorf("config %s: %w", name, err)
	}
	if dec.More() {
		return fmt.Errorf("config %s: trailing data after the JSON object", name)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("config %s: trailing data after the JSON object", name)
	}
	return nil
}

// nearestKey returns the config key (at any depth) closest to k in edit
// distance, if it is close enough to be a typo of it (letters inserted,
// deleted or changed in at most two fifths of its length), else "".
func nearestKey(k string) string {
	best, bestD := "", len(k)*2/5+1
	for _, key := range configKeys() {
		if d := editDistance(k, key); d < bestD || (d == bestD && best != "" && key < best) {
			best, bestD = key, d
		}
	}
	return best
}

// configKeys lists the JSON keys of Config and of the objects inside it.
func configKeys() []string {
	var keys []string
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for f := range t.Fields() {
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
				keys = append(keys, name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[Config]())
	return keys
}

// editDistance is the Levenshtein distance of a and b in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Wants of the key types whose JSON form is not what their Go type says.
const (
	byteSizeWant = `a non-negative integer of bytes, or a string such as "900MiB" (units KiB, MiB, GiB, TiB, B)`
	durationWant = `a duration string such as "30s" (units ns, us, ms, s, m, h)`
)

// jsonWant says in words what JSON value a config key of type t takes.
func jsonWant(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[ByteSize]():
		return byteSizeWant
	case reflect.TypeFor[Duration]():
		return durationWant
	}
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
		return "a list of " + plural(jsonWant(t.Elem()))
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return jsonWant(t.Elem())
	}
	return t.String()
}

// plural turns the wants of jsonWant into the plural after "a list of".
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
