package workload

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sampleSWF = `; Version: 2.2
; Computer: Test SP2
; MaxJobs: 3
; MaxRecords: 3
; MaxProcs: 64
;              http://example.invalid/workload
; a note without a key

    1      0    10   3600  16 -1 -1  16  7200 -1 1 3 3 -1 1 -1 -1 -1
    2     60     0     30   1 25.5 1024 1  60 2048 0 4 4 7 0 -1 1 12
    3    120    -1     -1  -1 -1 -1  32 600 -1 5 3 3 -1 1 -1 -1 -1
`

func checkSample(t *testing.T, jobs []Job, h Header) {
	t.Helper()
	if len(jobs) != 3 {
		t.Fatalf("got %d jobs, want 3", len(jobs))
	}
	want := Job{Number: 2, Submit: 60, Wait: 0, Run: 30, AllocProcs: 1, AvgCPU: 25.5, UsedMem: 1024,
		ReqProcs: 1, ReqTime: 60, ReqMem: 2048, Status: 0, User: 4, Group: 4, Executable: 7,
		Queue: 0, Partition: Unknown, PrecedingJob: 1, ThinkTime: 12}
	if jobs[1] != want {
		t.Fatalf("job 2 = %+v, want %+v", jobs[1], want)
	}
	if got := jobs[0].Procs(); got != 16 {
		t.Fatalf("Procs of job 1 = %d", got)
	}
	if got := jobs[2].Procs(); got != 32 {
		t.Fatalf("Procs falls back to requested: got %d", got)
	}
	if n, ok := h.Int("maxprocs"); !ok || n != 64 {
		t.Fatalf("MaxProcs = %d,%v", n, ok)
	}
	if v, ok := h.Get("Computer"); !ok || v != "Test SP2" {
		t.Fatalf("Computer = %q,%v", v, ok)
	}
	if _, ok := h.Get("http"); ok {
		t.Fatal("a URL continuation line must not become a keyed entry")
	}
	if len(h.Entries) != 7 {
		t.Fatalf("header entries = %d, want 7: %+v", len(h.Entries), h.Entries)
	}
}

func TestReadSampleSWF(t *testing.T) {
	jobs, h, err := ReadAll(strings.NewReader(sampleSWF))
	if err != nil {
		t.Fatal(err)
	}
	checkSample(t, jobs, h)

	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(sampleSWF)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	jobs, h, err = ReadAll(&buf)
	if err != nil {
		t.Fatalf("gzip: %v", err)
	}
	checkSample(t, jobs, h)

	// String round-trips through the parser.
	again, _, err := ReadAll(strings.NewReader(jobs[1].String() + "\n"))
	if err != nil || len(again) != 1 || again[0] != jobs[1] {
		t.Fatalf("round trip: %v %+v", err, again)
	}
}

func TestReadSWFErrors(t *testing.T) {
	good := "1 0 10 3600 16 -1 -1 16 7200 -1 1 3 3 -1 1 -1 -1 -1"
	fields := strings.Fields(good)
	with := func(i int, v string) string {
		f := append([]string(nil), fields...)
		f[i] = v
		return strings.Join(f, " ")
	}
	tests := []struct {
		name  string
		input string
		line  int
		field int
	}{
		{"too few fields", "; h\n1 2 3\n", 2, 0},
		{"too many fields", good + " 7\n", 1, 0},
		{"not a number", with(3, "abc") + "\n", 1, 4},
		{"negative below unknown", "\n" + with(8, "-5") + "\n", 2, 9},
		{"infinite", with(1, "Inf") + "\n", 1, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ReadAll(strings.NewReader(tc.input))
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line != tc.line || pe.Field != tc.field {
				t.Fatalf("err = %v, want ParseError line %d field %d", err, tc.line, tc.field)
			}
		})
	}
	// Decimal notation in an integer field is accepted.
	jobs, _, err := ReadAll(strings.NewReader(with(4, "16.00") + "\n"))
	if err != nil || jobs[0].AllocProcs != 16 {
		t.Fatalf("decimal field: %v %+v", err, jobs)
	}
	// A truncated gzip stream is an error, not a short read.
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte(strings.Repeat(good+"\n", 50)))
	_ = zw.Close()
	if _, _, err := ReadAll(bytes.NewReader(buf.Bytes()[:buf.Len()/2])); err == nil {
		t.Fatal("truncated gzip accepted")
	}
	if _, _, err := ReadFile(filepath.Join(t.TempDir(), "missing.swf")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// tracePath returns the path of a shared workload trace (kept beside the
// repository, read in place), skipping the test when it is absent.
func tracePath(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("repository root not found")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "workloads", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("trace %s not available: %v", name, err)
	}
	return p
}

func TestReadKTHTrace(t *testing.T) {
	jobs, h, err := ReadFile(tracePath(t, "KTH-SP2-1996-2.1-cln.swf.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := h.Int("MaxRecords"); !ok || int(n) != len(jobs) || len(jobs) != 28476 {
		t.Fatalf("jobs = %d, header MaxRecords = %d,%v; want 28476", len(jobs), n, ok)
	}
	if n, ok := h.Int("MaxProcs"); !ok || n != 100 {
		t.Fatalf("MaxProcs = %d,%v", n, ok)
	}
	overran, sum, unknownSize := 0, 0.0, 0
	prev := int64(-1)
	for _, j := range jobs {
		if j.ReqTime <= 0 || j.Procs() > 100 {
			t.Fatalf("job %d: requested time %d, procs %d", j.Number, j.ReqTime, j.Procs())
		}
		if j.Procs() <= 0 {
			unknownSize++
		}
		if j.Submit < prev {
			t.Fatalf("job %d submitted before its predecessor", j.Number)
		}
		prev = j.Submit
		if j.Run > j.ReqTime {
			overran++
		}
		sum += float64(j.Run) / float64(j.ReqTime)
	}
	if unknownSize != 1 {
		t.Errorf("jobs of unknown size = %d, want 1 (job 27313)", unknownSize)
	}
	if overran != 475 {
		t.Errorf("jobs over their requested time = %d, want 475", overran)
	}
	if mean := sum / float64(len(jobs)); mean < 0.47 || mean > 0.49 {
		t.Errorf("mean runtime/requested = %.3f, want about 0.48", mean)
	}
}
