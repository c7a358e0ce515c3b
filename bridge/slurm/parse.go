package slurm

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ledgerd/ledgerd/bridge"
)

// TimeLayout is how scontrol writes and reads times: local wall-clock time
// of the process, without a zone. The driver pins the zone with TZ.
const TimeLayout = "2006-01-02T15:04:05"

// Record is one line of `scontrol show ... -o`: its key=value pairs in
// order. Keys repeat in no output we know of; Get returns the first.
type Record []KV

// KV is one key=value pair of a Record.
type KV struct{ Key, Value string }

// Get returns the value of the first pair with the key.
func (r Record) Get(key string) (string, bool) {
	for _, kv := range r {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return "", false
}

// ParseRecord splits one line of `scontrol show ... -o` into pairs. Values
// may contain '=' (TRES=cpu=8) and spaces (a node's OS or a drain
// reason): a space-separated word that does not look like Key=... belongs
// to the value before it. A line that does not start with a key is an
// error.
func ParseRecord(line string) (Record, error) {
	var rec Record
	for _, word := range strings.Fields(line) {
		if k, v, ok := cutKey(word); ok {
			rec = append(rec, KV{Key: k, Value: v})
			continue
		}
		if len(rec) == 0 {
			return nil, fmt.Errorf("record %q: does not start with key=value", clip(line))
		}
		rec[len(rec)-1].Value += " " + word
	}
	return rec, nil
}

// cutKey splits word at its first '=' if what precedes it is a plausible
// key: a letter, then letters, digits, '_', ':' or '/'.
func cutKey(word string) (key, value string, ok bool) {
	k, v, found := strings.Cut(word, "=")
	if !found || k == "" {
		return "", "", false
	}
	for i, c := range k {
		letter := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
		if i == 0 && !letter || !(letter || c >= '0' && c <= '9' || c == '_' || c == ':' || c == '/') {
			return "", "", false
		}
	}
	return k, v, true
}

// ParseReservations parses the output of `scontrol show reservation -o`
// (one reservation a line; "No reservations in the system" when none).
// Times are read in loc, the zone scontrol ran in. The result is sorted by
// name; an error names the line and the field.
func ParseReservations(out string, loc *time.Location) ([]bridge.Reservation, error) {
	var res []bridge.Reservation
	for i, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "No reservations in the system") {
			continue
		}
		rec, err := ParseRecord(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		r, err := reservationOf(rec, loc)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		res = append(res, r)
	}
	slices.SortFunc(res, func(a, b bridge.Reservation) int { return strings.Compare(a.Name, b.Name) })
	return res, nil
}

func reservationOf(rec Record, loc *time.Location) (bridge.Reservation, error) {
	var r bridge.Reservation
	name, ok := rec.Get("ReservationName")
	if !ok || name == "" {
		return r, fmt.Errorf("ReservationName: missing")
	}
	r.Name = name
	var err error
	for _, f := range []struct {
		key string
		t   *time.Time
	}{{"StartTime", &r.Start}, {"EndTime", &r.End}} {
		v, ok := rec.Get(f.key)
		if !ok {
			return r, fmt.Errorf("reservation %s: %s: missing", name, f.key)
		}
		if *f.t, err = time.ParseInLocation(TimeLayout, v, loc); err != nil {
			return r, fmt.Errorf("reservation %s: %s: %w", name, f.key, err)
		}
	}
	nodes, _ := rec.Get("Nodes")
	if r.Nodes, err = ExpandHostlist(null(nodes)); err != nil {
		return r, fmt.Errorf("reservation %s: Nodes: %w", name, err)
	}
	r.Nodes = set(r.Nodes)
	for _, f := range []struct {
		key string
		out *[]string
	}{{"Users", &r.Users}, {"Accounts", &r.Accounts}, {"Groups", &r.Groups}, {"Flags", &r.Flags}} {
		v, _ := rec.Get(f.key)
		*f.out = set(splitList(null(v)))
	}
	r.Partition, _ = rec.Get("PartitionName")
	r.Partition = null(r.Partition)
	r.State, _ = rec.Get("State")
	return r, nil
}

// null maps scontrol's words for "nothing" to "".
func null(v string) string {
	switch v {
	case "(null)", "None", "NONE", "N/A", "n/a":
		return ""
	}
	return v
}

func splitList(v string) []string {
	if v == "" {
		return nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func set(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

// MaxHostlist bounds how many names ExpandHostlist produces, so that a
// hostile or corrupt "n[1-999999999]" costs an error, not the memory.
const MaxHostlist = 1 << 16

// ExpandHostlist expands a Slurm hostlist such as "n[1-3,7],gpu[01-02],x"
// or "r[1-2]-n[1-2]" into names, in order. Ranges keep the width of their
// lower bound ("gpu[01-02]" gives gpu01, gpu02). An empty list gives none.
func ExpandHostlist(list string) ([]string, error) {
	var out []string
	for _, item := range splitTop(list) {
		if item == "" {
			continue
		}
		names, err := expandOne(item, MaxHostlist-len(out))
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", clip(list), err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// splitTop splits at commas outside brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func expandOne(item string, budget int) ([]string, error) {
	if budget <= 0 {
		return nil, fmt.Errorf("more than %d names", MaxHostlist)
	}
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsAny(item, "]") {
			return nil, fmt.Errorf("%q: unbalanced ']'", item)
		}
		return []string{item}, nil
	}
	closing := strings.IndexByte(item[open:], ']')
	if closing < 0 {
		return nil, fmt.Errorf("%q: '[' without ']'", item)
	}
	closing += open
	head, body, tail := item[:open], item[open+1:closing], item[closing+1:]
	if strings.ContainsAny(head, "]") || strings.ContainsAny(body, "[") {
		return nil, fmt.Errorf("%q: nested or unbalanced brackets", item)
	}
	var mids []string
	for _, r := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.ParseUint(lo, 10, 32)
		b, err2 := strconv.ParseUint(hi, 10, 32)
		if err1 != nil || err2 != nil || a > b {
			return nil, fmt.Errorf("%q: bad range %q", item, r)
		}
		if b-a >= uint64(budget) || len(mids)+int(b-a+1) > budget {
			return nil, fmt.Errorf("%q: more than %d names", item, MaxHostlist)
		}
		for n := a; n <= b; n++ {
			d := strconv.FormatUint(n, 10)
			if pad := len(lo) - len(d); pad > 0 {
				d = strings.Repeat("0", pad) + d
			}
			mids = append(mids, d)
		}
	}
	tails, err := expandOne(tail, budget)
	if err != nil {
		return nil, err
	}
	if len(mids)*len(tails) > budget {
		return nil, fmt.Errorf("%q: more than %d names", item, MaxHostlist)
	}
	out := make([]string, 0, len(mids)*len(tails))
	for _, m := range mids {
		for _, t := range tails {
			out = append(out, head+m+t)
		}
	}
	return out, nil
}

// ParseNodes parses `sinfo -h -N -O NodeList:|,StateComplete:|,Reason:`
// lines ("n2|idle+drain|maintenance") into nodes sorted by name; a node
// listed twice (in several partitions) is kept once.
func ParseNodes(out string) ([]bridge.Node, error) {
	byName := map[string]bridge.Node{}
	for i, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		parts := strings.SplitN(line, "|", 3)
		if len(parts) < 2 {
			return nil, fmt.Errorf("line %d: %q: want NODE|STATE|REASON", i+1, clip(line))
		}
		name := strings.TrimSpace(parts[0])
		if name == "" {
			return nil, fmt.Errorf("line %d: node name: empty", i+1)
		}
		n := parseState(strings.TrimSpace(parts[1]))
		n.Name = name
		if len(parts) == 3 {
			n.Reason = null(strings.TrimSpace(parts[2]))
			if n.Reason == "none" {
				n.Reason = ""
			}
		}
		byName[name] = n
	}
	nodes := make([]bridge.Node, 0, len(byName))
	for _, n := range byName {
		nodes = append(nodes, n)
	}
	slices.SortFunc(nodes, func(a, b bridge.Node) int { return compareNodeNames(a.Name, b.Name) })
	return nodes, nil
}

// stateSuffix maps sinfo's one-character state suffixes to flags.
var stateSuffix = map[byte]string{
	'*': "not_responding", '~': "powered_down", '#': "powering_up", '%': "powering_down",
	'!': "power_down", '$': "maint", '@': "reboot_requested", '^': "reboot_issued", '-': "planned",
}

// parseState reads "idle+drain", "down*" or "MIXED+RESERVED" into a base
// state and flags, lower case.
func parseState(s string) bridge.Node {
	var n bridge.Node
	parts := strings.Split(strings.ToLower(s), "+")
	base := parts[0]
	for len(base) > 0 {
		f, ok := stateSuffix[base[len(base)-1]]
		if !ok {
			break
		}
		n.Flags = append(n.Flags, f)
		base = base[:len(base)-1]
	}
	n.State = base
	for _, f := range parts[1:] {
		if f != "" {
			n.Flags = append(n.Flags, f)
		}
	}
	n.Flags = set(n.Flags)
	return n
}

// compareNodeNames orders names naturally: n2 before n10.
func compareNodeNames(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			x, _ := strconv.ParseUint(a[:da], 10, 64)
			y, _ := strconv.ParseUint(b[:db], 10, 64)
			if x != y {
				if x < y {
					return -1
				}
				return 1
			}
			if da != db {
				return da - db
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			if a[0] < b[0] {
				return -1
			}
			return 1
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func digits(s string) int {
	i := 0
	for i < len(s) && i < 18 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
