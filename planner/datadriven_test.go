package planner

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Data-driven scheduler tests. Each file in testdata/ is a script of
// directives:
//
//	# comment
//	command key=value ...
//	----
//	expected output (no blank lines)
//
// separated by blank lines. Every script runs once per timeline factory
// and must produce the same output on each. Regenerate the expected
// output with
//
//	go test ./planner -run TestDataDriven -rewrite
//
// Commands (times accept "max" for MaxTime; res=a:2,b:1 lists parts, or
// res=a qty=2 for one part):
//
//	resource name= cap=            AddResource
//	remove name=                   RemoveResource
//	capacity res= from= to= cap=   SetCapacity
//	book id= res= start= end=      Book
//	reserve id= res= dur= nb= dl=  Reserve
//	find res= dur= nb= dl=         Find
//	offers res= dur= nb= dl= k=    Offers
//	release id=                    Release
//	modify id= res= start= end=    Modify
//	get id=                        Get
//	advance now=                   Advance
//	blocks res= [from= to=]        Availability as a block list
//	show res= from= to=            ASCII picture of capacity and bookings
//	usage res= from= to=           Usage
var flagRewrite = flag.Bool("rewrite", false, "rewrite the expected output of the testdata scripts")

// ddDirective is one command of a script with its expected output.
type ddDirective struct {
	line     int
	pre      []string // comment and blank lines before the command
	cmd      string
	expected string
	actual   string
}

func parseScript(t *testing.T, path string) ([]*ddDirective, []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var out []*ddDirective
	var pre []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			pre = append(pre, l)
			continue
		}
		d := &ddDirective{line: i + 1, pre: pre, cmd: l}
		pre = nil
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s:%d: command not followed by ----", path, i+1)
		}
		i += 2
		var exp []string
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			exp = append(exp, lines[i])
		}
		d.expected = strings.Join(exp, "\n")
		out = append(out, d)
		i-- // the blank line (if any) belongs to the next directive

	}
	return out, pre
}

func writeScript(t *testing.T, path string, ds []*ddDirective, trailer []string) {
	t.Helper()
	var b strings.Builder
	for _, d := range ds {
		for _, p := range d.pre {
			b.WriteString(p + "\n")
		}
		b.WriteString(d.cmd + "\n----\n")
		if d.actual != "" {
			b.WriteString(d.actual + "\n")
		}
	}
	for _, p := range trailer {
		b.WriteString(p + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDataDriven(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no scripts in testdata/")
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			ds, trailer := parseScript(t, path)
			for fi, f := range factories {
				p := New(f.f)
				for _, d := range ds {
					got := ddRun(p, d.cmd)
					if fi == 0 && *flagRewrite {
						d.actual = got
						continue
					}
					if got != d.expected {
						t.Errorf("%s:%d (%s): %s\ngot:\n%s\nwant:\n%s", path, d.line, f.name, d.cmd, got, d.expected)
					}
				}
			}
			if *flagRewrite {
				writeScript(t, path, ds, trailer)
			}
		})
	}
}

// ddArgs parses key=value arguments.
type ddArgs map[string]string

func (a ddArgs) int(key string) (int64, error) {
	v, ok := a[key]
	if !ok {
		return 0, fmt.Errorf("missing argument %s", key)
	}
	if v == "max" {
		return MaxTime, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

func (a ddArgs) parts() ([]Part, error) {
	res, ok := a["res"]
	if !ok {
		return nil, errors.New("missing argument res")
	}
	if q, ok := a["qty"]; ok {
		n, err := strconv.ParseInt(q, 10, 64)
		return []Part{{Resource: res, Amount: n}}, err
	}
	var parts []Part
	for _, s := range strings.Split(res, ",") {
		name, amt, ok := strings.Cut(s, ":")
		if !ok {
			return nil, fmt.Errorf("part %q: want name:amount", s)
		}
		n, err := strconv.ParseInt(amt, 10, 64)
		if err != nil {
			return nil, err
		}
		parts = append(parts, Part{Resource: name, Amount: n})
	}
	return parts, nil
}

func (a ddArgs) request() (Request, error) {
	var r Request
	var err error
	if r.Parts, err = a.parts(); err != nil {
		return r, err
	}
	if r.Duration, err = a.int("dur"); err != nil {
		return r, err
	}
	if r.NotBefore, err = a.int("nb"); err != nil {
		return r, err
	}
	if _, ok := a["dl"]; !ok {
		r.Deadline = MaxTime
		return r, nil
	}
	r.Deadline, err = a.int("dl")
	return r, err
}

// ddErr renders an error for the expected output: its class and message.
func ddErr(err error) string {
	var ce *CapacityConflictError
	if errors.As(err, &ce) {
		return fmt.Sprintf("conflict: %v", ce.Violated)
	}
	return "error: " + err.Error()
}

func ddDecision(d Decision) string {
	var s string
	if d.Fits {
		s = fmt.Sprintf("fits start=%d", d.Start)
	} else {
		s = "no fit in window"
	}
	if d.LaterOK {
		s += fmt.Sprintf(" later=%d", d.LaterStart)
	} else if !d.Fits {
		s += " later=none"
	}
	return s
}

func fmtTime(t int64) string {
	if t == MaxTime {
		return "max"
	}
	return strconv.FormatInt(t, 10)
}

func fmtBlocks(bs []Block) string {
	var b strings.Builder
	for i, x := range bs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "[%s,%s)=%d", fmtTime(x.Start), fmtTime(x.End), x.Free)
	}
	return b.String()
}

// ddRun executes one command and renders its outcome.
func ddRun(p *Planner, cmd string) string {
	fields := strings.Fields(cmd)
	args := ddArgs{}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		args[k] = v
	}
	out, err := ddExec(p, fields[0], args)
	if err != nil {
		return ddErr(err)
	}
	return out
}

func ddExec(p *Planner, name string, a ddArgs) (string, error) {
	switch name {
	case "resource":
		c, err := a.int("cap")
		if err != nil {
			return "", err
		}
		return "ok", p.AddResource(a["name"], c)
	case "remove":
		return "ok", p.RemoveResource(a["name"])
	case "capacity":
		from, err1 := a.int("from")
		to, err2 := a.int("to")
		c, err3 := a.int("cap")
		if err := errors.Join(err1, err2, err3); err != nil {
			return "", err
		}
		return "ok", p.SetCapacity(a["res"], from, to, c)
	case "book", "modify":
		parts, err := a.parts()
		if err != nil {
			return "", err
		}
		s, err1 := a.int("start")
		e, err2 := a.int("end")
		if err := errors.Join(err1, err2); err != nil {
			return "", err
		}
		if name == "book" {
			return "ok", p.Book(Booking{ID: a["id"], Parts: parts, Start: s, End: e})
		}
		return "ok", p.Modify(a["id"], parts, s, e)
	case "reserve":
		r, err := a.request()
		if err != nil {
			return "", err
		}
		d, err := p.Reserve(a["id"], r)
		if err != nil && errors.Is(err, ErrNoCapacity) {
			return ddDecision(d) + "\n" + ddErr(err), nil
		}
		return ddDecision(d), err
	case "find":
		r, err := a.request()
		if err != nil {
			return "", err
		}
		d, err := p.Find(r)
		return ddDecision(d), err
	case "offers":
		r, err := a.request()
		if err != nil {
			return "", err
		}
		k, err := a.int("k")
		if err != nil {
			return "", err
		}
		offers, err := p.Offers(r, int(k))
		return fmt.Sprintf("offers %v", offers), err
	case "release":
		b, err := p.Release(a["id"])
		return fmt.Sprintf("released %s %v [%s,%s)", b.ID, b.Parts, fmtTime(b.Start), fmtTime(b.End)), err
	case "get":
		b, ok := p.Get(a["id"])
		if !ok {
			return "not found", nil
		}
		return fmt.Sprintf("%s %v [%s,%s)", b.ID, b.Parts, fmtTime(b.Start), fmtTime(b.End)), nil
	case "advance":
		now, err := a.int("now")
		if err != nil {
			return "", err
		}
		p.Advance(now)
		return fmt.Sprintf("origin=%d live=%d", p.Origin(), p.Len()), nil
	case "blocks":
		from, to := p.Origin(), MaxTime
		var err error
		if _, ok := a["from"]; ok {
			if from, err = a.int("from"); err != nil {
				return "", err
			}
		}
		if _, ok := a["to"]; ok {
			if to, err = a.int("to"); err != nil {
				return "", err
			}
		}
		bs, err := p.Availability(a["res"], from, to)
		return fmtBlocks(bs), err
	case "show":
		from, err1 := a.int("from")
		to, err2 := a.int("to")
		if err := errors.Join(err1, err2); err != nil {
			return "", err
		}
		return ddShow(p, a["res"], from, to)
	case "usage":
		from, err1 := a.int("from")
		to, err2 := a.int("to")
		if err := errors.Join(err1, err2); err != nil {
			return "", err
		}
		u, err := p.Usage(a["res"], from, to)
		return fmt.Sprintf("capacity=%d booked=%d free=%d largest=%d utilization=%.3f fragmentation=%.3f",
			u.CapacityArea, u.BookedArea, u.FreeArea, u.LargestFreeBlock, u.Utilization(), u.Fragmentation()), err
	}
	return "", fmt.Errorf("unknown command %q", name)
}

// ddShow draws capacity over [from, to): one column per time unit (or per
// bucket of units for wide windows, sampled at the bucket's start), one row
// per capacity unit, '=' for booked and '.' for free capacity.
func ddShow(p *Planner, name string, from, to int64) (string, error) {
	free, err := p.Availability(name, from, to)
	if err != nil {
		return "", err
	}
	capacity := p.resources[name].capacity.Blocks(from, to)
	const maxCols = 80
	step := max(1, (to-from+maxCols-1)/maxCols)
	at := func(bs []Block, t int64) int64 {
		for _, b := range bs {
			if b.Start <= t && t < b.End {
				return b.Free
			}
		}
		return 0
	}
	var cols [][2]int64 // capacity, free
	height := int64(1)
	for t := from; t < to; t += step {
		c, f := at(capacity, t), at(free, t)
		cols = append(cols, [2]int64{c, f})
		height = max(height, c)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s [%d,%d) 1 column = %d\n", name, from, to, step)
	for level := height; level >= 1; level-- {
		fmt.Fprintf(&b, "%3d |", level)
		for _, c := range cols {
			switch booked := c[0] - c[1]; {
			case level > c[0]:
				b.WriteByte(' ')
			case level <= booked:
				b.WriteByte('=')
			default:
				b.WriteByte('.')
			}
		}
		b.WriteString("\n")
	}
	// Axis: a tick every 10 columns labelled with its time.
	axis := []byte("    +" + strings.Repeat("-", len(cols)))
	labels := []byte(strings.Repeat(" ", 5+len(cols)+12))
	for i := 0; i < len(cols); i += 10 {
		if i > 0 {
			axis[5+i] = '+'
		}
		copy(labels[5+i:], strconv.FormatInt(from+int64(i)*step, 10))
	}
	b.Write(axis)
	b.WriteString("\n")
	b.WriteString(strings.TrimRight(string(labels), " "))
	return b.String(), nil
}
