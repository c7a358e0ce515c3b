package workload

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Unknown is the SWF marker for a field whose value was not recorded.
const Unknown = -1

// SWFFields is the number of fields on every SWF job line.
const SWFFields = 18

// Job is one line of an SWF log. Times are in seconds; Unknown (-1) marks a
// field the log does not record.
type Job struct {
	Number       int64   // 1: job number
	Submit       int64   // 2: submit time, seconds from the log's start
	Wait         int64   // 3: wait time in the queue
	Run          int64   // 4: run time (wall clock)
	AllocProcs   int64   // 5: number of allocated processors
	AvgCPU       float64 // 6: average CPU time used per processor
	UsedMem      float64 // 7: used memory per processor (KB)
	ReqProcs     int64   // 8: requested number of processors
	ReqTime      int64   // 9: requested (estimated) run time
	ReqMem       float64 // 10: requested memory per processor (KB)
	Status       int64   // 11: 1 completed, 0 failed, 5 cancelled
	User         int64   // 12: user id
	Group        int64   // 13: group id
	Executable   int64   // 14: executable (application) number
	Queue        int64   // 15: queue number
	Partition    int64   // 16: partition number
	PrecedingJob int64   // 17: number of a job this one waited for
	ThinkTime    int64   // 18: think time after the preceding job
}

// Procs returns the job's size: the allocated processors, or the requested
// ones when the allocation is unknown.
func (j Job) Procs() int64 {
	if j.AllocProcs > 0 {
		return j.AllocProcs
	}
	return j.ReqProcs
}

// swfFieldNames names the fields in order, for error messages.
var swfFieldNames = [SWFFields]string{
	"job number", "submit time", "wait time", "run time", "allocated processors",
	"average CPU time", "used memory", "requested processors", "requested time",
	"requested memory", "status", "user id", "group id", "executable",
	"queue", "partition", "preceding job", "think time",
}

// ParseError reports a malformed SWF line: its number (1-based, counting
// header lines) and the field at fault (1-based, 0 for the whole line).
type ParseError struct {
	Line   int
	Field  int
	Reason string
}

// Error implements error.
func (e *ParseError) Error() string {
	if e.Field == 0 {
		return fmt.Sprintf("swf line %d: %s", e.Line, e.Reason)
	}
	return fmt.Sprintf("swf line %d: field %d (%s): %s", e.Line, e.Field, swfFieldNames[e.Field-1], e.Reason)
}

// Header holds the "; Key: Value" comment lines that precede the jobs, in
// order. Comment lines without a key are kept with an empty Key.
type Header struct {
	Entries []HeaderEntry
}

// HeaderEntry is one header comment line.
type HeaderEntry struct {
	Key   string
	Value string
}

// Get returns the value of the first entry with the given key
// (case-insensitive) and whether there was one.
func (h Header) Get(key string) (string, bool) {
	for _, e := range h.Entries {
		if strings.EqualFold(e.Key, key) {
			return e.Value, true
		}
	}
	return "", false
}

// Int returns the integer value of key, or ok=false when absent or not an
// integer.
func (h Header) Int(key string) (int64, bool) {
	v, ok := h.Get(key)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.Fields(v + " x")[0], 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// Reader reads jobs from an SWF stream, plain or gzip-compressed (detected
// from the gzip magic bytes). Comment lines (starting with ';') anywhere in
// the stream are collected into Header; blank lines are skipped.
type Reader struct {
	sc     *bufio.Scanner
	line   int
	header Header
	closer io.Closer
}

// NewReader returns a Reader over r, decompressing it if it is gzip data.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("swf: peek: %w", err)
	}
	var src io.Reader = br
	var closer io.Closer
	if bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("swf: gzip: %w", err)
		}
		src, closer = zr, zr
	}
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	return &Reader{sc: sc, closer: closer}, nil
}

// Header returns the comment lines read so far; after the first call to
// Read it holds the whole leading header.
func (r *Reader) Header() Header { return r.header }

// Read returns the next job, or io.EOF after the last one. A malformed line
// yields a *ParseError naming the line and field.
func (r *Reader) Read() (Job, error) {
	for r.sc.Scan() {
		r.line++
		text := strings.TrimSpace(r.sc.Text())
		if text == "" {
			continue
		}
		if strings.HasPrefix(text, ";") {
			r.addHeader(strings.TrimSpace(text[1:]))
			continue
		}
		return parseJob(r.line, text)
	}
	if err := r.sc.Err(); err != nil {
		return Job{}, fmt.Errorf("swf: read after line %d: %w", r.line, err)
	}
	return Job{}, io.EOF
}

// addHeader records one comment line. "Key: value" lines, where Key is a
// single word, become keyed entries; anything else (continuation lines,
// prose, URLs) is kept verbatim with an empty key.
func (r *Reader) addHeader(text string) {
	if text == "" {
		return
	}
	key, value, ok := strings.Cut(text, ":")
	if !ok || key == "" || strings.ContainsAny(key, " \t") || strings.HasPrefix(value, "//") {
		r.header.Entries = append(r.header.Entries, HeaderEntry{Value: text})
		return
	}
	r.header.Entries = append(r.header.Entries, HeaderEntry{Key: key, Value: strings.TrimSpace(value)})
}

// Close releases the decompressor, if any. It does not close the
// underlying reader.
func (r *Reader) Close() error {
	if r.closer != nil {
		if err := r.closer.Close(); err != nil {
			return fmt.Errorf("swf: close: %w", err)
		}
	}
	return nil
}

// ReadAll reads every job from r.
func ReadAll(r io.Reader) ([]Job, Header, error) {
	sr, err := NewReader(r)
	if err != nil {
		return nil, Header{}, err
	}
	defer sr.Close()
	var jobs []Job
	for {
		j, err := sr.Read()
		if errors.Is(err, io.EOF) {
			return jobs, sr.Header(), nil
		}
		if err != nil {
			return nil, Header{}, err
		}
		jobs = append(jobs, j)
	}
}

// ReadFile reads every job from the SWF file at path (gzip or plain).
func ReadFile(path string) ([]Job, Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, Header{}, fmt.Errorf("swf: %w", err)
	}
	defer f.Close()
	jobs, h, err := ReadAll(f)
	if err != nil {
		return nil, Header{}, fmt.Errorf("swf %s: %w", path, err)
	}
	return jobs, h, nil
}

func parseJob(line int, text string) (Job, error) {
	fs := strings.Fields(text)
	if len(fs) != SWFFields {
		return Job{}, &ParseError{Line: line, Reason: fmt.Sprintf("has %d fields, want %d", len(fs), SWFFields)}
	}
	var ints [SWFFields]int64
	var floats [SWFFields]float64
	for i, f := range fs {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return Job{}, &ParseError{Line: line, Field: i + 1, Reason: fmt.Sprintf("%q is not a number", f)}
		}
		if v < Unknown {
			return Job{}, &ParseError{Line: line, Field: i + 1, Reason: fmt.Sprintf("%q is negative (only -1, unknown, is allowed)", f)}
		}
		floats[i] = v
		if n, err := strconv.ParseInt(f, 10, 64); err == nil {
			ints[i] = n
		} else {
			// Some logs write integral fields as decimals ("12.00").
			if v > math.MaxInt64/2 {
				return Job{}, &ParseError{Line: line, Field: i + 1, Reason: fmt.Sprintf("%q is out of range", f)}
			}
			ints[i] = int64(math.Round(v))
		}
	}
	return Job{
		Number: ints[0], Submit: ints[1], Wait: ints[2], Run: ints[3], AllocProcs: ints[4],
		AvgCPU: floats[5], UsedMem: floats[6], ReqProcs: ints[7], ReqTime: ints[8], ReqMem: floats[9],
		Status: ints[10], User: ints[11], Group: ints[12], Executable: ints[13], Queue: ints[14],
		Partition: ints[15], PrecedingJob: ints[16], ThinkTime: ints[17],
	}, nil
}

// String formats the job as an SWF line.
func (j Job) String() string {
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return fmt.Sprintf("%d %d %d %d %d %s %s %d %d %s %d %d %d %d %d %d %d %d",
		j.Number, j.Submit, j.Wait, j.Run, j.AllocProcs, num(j.AvgCPU), num(j.UsedMem),
		j.ReqProcs, j.ReqTime, num(j.ReqMem), j.Status, j.User, j.Group, j.Executable,
		j.Queue, j.Partition, j.PrecedingJob, j.ThinkTime)
}
