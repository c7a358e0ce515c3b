package agent

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/ledgerd/ledgerd/internal/strictjson"
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
	err := strictjson.Decode(b, c)
	var te *strictjson.TypeError
	var uk *strictjson.UnknownKeyError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te) && te.Key == "":
		return fmt.Errorf("config %s: want a JSON object of settings, got %s", name, te.Got)
	case errors.As(err, &te):
		return fmt.Errorf("config %s: key %q: want %s, got %s", name, te.Key, jsonWant(te.Type), te.Got)
	case errors.As(err, &uk):
		if near := nearestKey(uk.Key); near != "" {
			return fmt.Errorf("config %s: %v (did you mean %q?)", name, uk, near)
		}
		return fmt.Errorf("config %s: %v", name, uk)
	case errors.Is(err, strictjson.ErrTrailing):
		return fmt.Errorf("config %s: %v", name, err)
	}
	return fmt.Errorf("config %s: %w", name, err)
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

// jsonWant says in words what JSON value a config key of type t takes:
// strictjson.Want, but for the key types whose JSON form is not what
// their Go type says.
func jsonWant(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[ByteSize]():
		return byteSizeWant
	case reflect.TypeFor[Duration]():
		return durationWant
	}
	return strictjson.Want(t)
}
