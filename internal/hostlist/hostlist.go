// Package hostlist expands Slurm-style host lists ("n[1-64]",
// "gpu[01-08],login1", "rack[1-2]-n[1-4]") into the names they stand
// for, in order. It is what the API edge uses to read the unit names of a
// resource (ledgerd resource create -nodes) and what a resource-manager
// bridge can use to read a manager's node lists.
//
// It does no I/O and never panics: malformed input, a list longer than
// the caller's limit, or a name that repeats gives an *Error saying what
// is wrong and where.
package hostlist

import (
	"fmt"
	"strconv"
	"strings"
)

// Error is a malformed or unacceptable host list: Pos is the byte offset
// in the expression (−1 when the problem is not at one place).
type Error struct {
	Pos    int
	Reason string
}

// Error implements error.
func (e *Error) Error() string {
	if e.Pos < 0 {
		return e.Reason
	}
	return fmt.Sprintf("at byte %d: %s", e.Pos, e.Reason)
}

// maxWidth bounds the digits of a range bound (zero padding included).
const maxWidth = 9

// Expand returns the names expr stands for, in order. expr is a
// comma-separated list of items; an item is literal text with bracket
// groups, each a comma-separated list of numbers and ranges lo-hi
// (lo <= hi); an item with several groups stands for every combination,
// the last group varying fastest. A range keeps the zero padding of its
// lower bound ("n[08-10]" is n08 n09 n10). Whitespace is not allowed.
// More than max names, an empty name or a repeated name is an error.
func Expand(expr string, max int) ([]string, error) {
	if expr == "" {
		return nil, &Error{Pos: -1, Reason: "empty host list"}
	}
	var out []string
	seen := make(map[string]int)
	for start := 0; start <= len(expr); {
		end, err := itemEnd(expr, start)
		if err != nil {
			return nil, err
		}
		item := expr[start:end]
		if item == "" {
			return nil, &Error{Pos: start, Reason: "empty name"}
		}
		names, err := expandItem(item, start, max-len(out), max)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if first, dup := seen[n]; dup {
				return nil, &Error{Pos: -1, Reason: fmt.Sprintf("name %q appears twice (names %d and %d)", n, first+1, len(out)+1)}
			}
			seen[n] = len(out)
			out = append(out, n)
		}
		start = end + 1
	}
	return out, nil
}

// itemEnd returns the end of the item starting at start: the next comma
// outside brackets, or the end of expr.
func itemEnd(expr string, start int) (int, error) {
	depth, open := 0, 0
	for i := start; i < len(expr); i++ {
		switch c := expr[i]; c {
		case '[':
			if depth > 0 {
				return 0, &Error{Pos: i, Reason: "nested '['"}
			}
			depth, open = 1, i
		case ']':
			if depth == 0 {
				return 0, &Error{Pos: i, Reason: "']' without '['"}
			}
			depth = 0
		case ',':
			if depth == 0 {
				return i, nil
			}
		default:
			if c <= ' ' || c >= 0x7f {
				return 0, &Error{Pos: i, Reason: fmt.Sprintf("character %q not allowed", c)}
			}
		}
	}
	if depth > 0 {
		return 0, &Error{Pos: open, Reason: "'[' without ']'"}
	}
	return len(expr), nil
}

// expandItem expands one item (no top-level commas) at offset off of the
// whole expression, refusing more than room names (max in all).
func expandItem(item string, off, room, max int) ([]string, error) {
	names := []string{""}
	for i := 0; i < len(item); {
		j := strings.IndexByte(item[i:], '[')
		if j < 0 {
			names = appendAll(names, []string{item[i:]})
			break
		}
		if j > 0 {
			names = appendAll(names, []string{item[i : i+j]})
		}
		i += j
		k := strings.IndexByte(item[i:], ']') + i
		vals, err := expandGroup(item[i+1:k], off+i+1, room, max)
		if err != nil {
			return nil, err
		}
		if len(names)*len(vals) > room {
			return nil, &Error{Pos: off + i, Reason: fmt.Sprintf("more than %d names", max)}
		}
		names = appendAll(names, vals)
		i = k + 1
	}
	if len(names) > room {
		return nil, &Error{Pos: off, Reason: fmt.Sprintf("more than %d names", max)}
	}
	return names, nil
}

// appendAll returns every prefix followed by every suffix (suffixes
// varying fastest).
func appendAll(prefixes, suffixes []string) []string {
	out := make([]string, 0, len(prefixes)*len(suffixes))
	for _, p := range prefixes {
		for _, s := range suffixes {
			out = append(out, p+s)
		}
	}
	return out
}

// expandGroup expands the inside of one bracket group at offset off.
func expandGroup(g string, off, room, max int) ([]string, error) {
	if g == "" {
		return nil, &Error{Pos: off, Reason: "empty '[]'"}
	}
	var out []string
	for pos := 0; pos <= len(g); {
		end := strings.IndexByte(g[pos:], ',')
		if end < 0 {
			end = len(g)
		} else {
			end += pos
		}
		r := g[pos:end]
		lo, hi, ok := strings.Cut(r, "-")
		if !ok {
			hi = lo
		}
		a, err := bound(lo, off+pos)
		if err != nil {
			return nil, err
		}
		b, err := bound(hi, off+pos+len(lo)+1)
		if err != nil {
			return nil, err
		}
		if b < a {
			return nil, &Error{Pos: off + pos, Reason: fmt.Sprintf("range %q runs backwards", r)}
		}
		if b-a+1 > room-len(out) {
			return nil, &Error{Pos: off + pos, Reason: fmt.Sprintf("range %q: more than %d names", r, max)}
		}
		width := len(lo)
		for v := a; v <= b; v++ {
			out = append(out, fmt.Sprintf("%0*d", width, v))
		}
		pos = end + 1
	}
	return out, nil
}

// bound parses one decimal range bound at offset off.
func bound(s string, off int) (int, error) {
	if s == "" {
		return 0, &Error{Pos: off, Reason: "missing number"}
	}
	if len(s) > maxWidth {
		return 0, &Error{Pos: off, Reason: fmt.Sprintf("number %q longer than %d digits", s, maxWidth)}
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, &Error{Pos: off + i, Reason: fmt.Sprintf("%q is not a number", s)}
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, &Error{Pos: off, Reason: fmt.Sprintf("%q is not a number", s)}
	}
	return v, nil
}

// Compress writes names as a host list that Expand turns back into the
// same names: consecutive names that differ only in a trailing number of
// the same width are folded into one bracket group ("n1,n2,n3,n5" →
// "n[1-3,5]"). Names keep their order; a name is folded only into the
// group of the name right before it.
func Compress(names []string) string {
	var b strings.Builder
	for i := 0; i < len(names); {
		prefix, num, width, ok := splitNum(names[i])
		if !ok {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(names[i])
			i++
			continue
		}
		// Runs lo-hi of the names sharing prefix and width.
		var runs [][2]int
		lo, hi := num, num
		j := i + 1
		for ; j < len(names); j++ {
			p, n, w, ok := splitNum(names[j])
			if !ok || p != prefix || w != width || n <= hi {
				break
			}
			if n == hi+1 {
				hi = n
				continue
			}
			runs = append(runs, [2]int{lo, hi})
			lo, hi = n, n
		}
		runs = append(runs, [2]int{lo, hi})
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(prefix)
		if j == i+1 {
			fmt.Fprintf(&b, "%0*d", width, num)
			i = j
			continue
		}
		b.WriteByte('[')
		for k, r := range runs {
			if k > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%0*d", width, r[0])
			if r[1] != r[0] {
				fmt.Fprintf(&b, "-%0*d", width, r[1])
			}
		}
		b.WriteByte(']')
		i = j
	}
	return b.String()
}

// splitNum splits a name into a prefix without brackets and a trailing
// decimal number of at most maxWidth digits whose printed width is
// width (a number with a leading zero keeps it; "n007" is width 3).
func splitNum(s string) (prefix string, num, width int, ok bool) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	digits := s[i:]
	if digits == "" || len(digits) > maxWidth || strings.ContainsAny(s[:i], "[],") {
		return "", 0, 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return "", 0, 0, false
	}
	if len(fmt.Sprintf("%0*d", len(digits), n)) != len(digits) {
		return "", 0, 0, false
	}
	return s[:i], n, len(digits), true
}
