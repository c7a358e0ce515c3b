package agent

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
)

// ByteSize is a number of bytes, written as an integer or as a string
// with a binary unit: "900MiB", "2GiB", "512KiB", "123".
type ByteSize int64

// byteUnits are the accepted suffixes, longest first.
var byteUnits = []struct {
	suffix string
	mult   int64
}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}}

// parseByteSize reads "<integer>[KiB|MiB|GiB|TiB|B]".
func parseByteSize(v string) (ByteSize, error) {
	num, mult := strings.TrimSpace(v), int64(1)
	for _, u := range byteUnits {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a non-negative integer of bytes, optionally with KiB, MiB, GiB or TiB, got %q", v)
	}
	if n > (1<<63-1)/mult {
		return 0, fmt.Errorf("%q overflows", v)
	}
	return ByteSize(n * mult), nil
}

// UnmarshalJSON accepts a number of bytes or a string with a unit; null
// leaves the value as it was, as it does for keys of the plain types. Its
// errors are json.UnmarshalTypeErrors, which the JSON decoder completes
// with the key's name (it does not for other errors); the config file
// reader turns them into a message naming the key (see decodeConfigFile).
func (b *ByteSize) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	bad := func() error {
		return &json.UnmarshalTypeError{Value: string(data), Type: reflect.TypeFor[ByteSize]()}
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		var n json.Number
		if err := json.Unmarshal(data, &n); err != nil {
			return bad()
		}
		s = n.String()
	}
	v, err := parseByteSize(s)
	if err != nil {
		return bad()
	}
	*b = v
	return nil
}

// applyMemoryLimit sets the Go runtime's soft memory limit from
// memory_limit (0 leaves the runtime's own: GOMEMLIMIT, or none). Near
// the limit the collector runs more often instead of letting the heap
// grow to twice the live data, which is what keeps a node with a large
// table inside the memory it was given.
func (a *Agent) applyMemoryLimit() {
	if a.cfg.MemoryLimit <= 0 {
		return
	}
	prev := debug.SetMemoryLimit(int64(a.cfg.MemoryLimit))
	a.log.Info("memory limit set", "bytes", int64(a.cfg.MemoryLimit), "previous", prev)
}
