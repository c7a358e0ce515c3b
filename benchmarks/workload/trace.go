package workload

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Trace is an SWF log loaded for an experiment, with what its header says
// about the machine it came from.
type Trace struct {
	// Path is the file the trace was read from.
	Path string
	// Name labels the trace in tables, CSV files and plot titles: the file
	// name without its directory and without the .swf / .swf.gz suffix.
	Name string
	// Jobs are the log's jobs in file order (only the first MaxJobs when
	// LoadTrace was given a limit).
	Jobs []Job
	// Read is the number of job lines in the file before any limit.
	Read   int
	Header Header
}

// TraceName returns the label LoadTrace gives the trace at path.
func TraceName(path string) string {
	name := filepath.Base(path)
	for _, suffix := range []string{".gz", ".swf"} {
		name = strings.TrimSuffix(name, suffix)
	}
	if name == "" || name == "." {
		return "trace"
	}
	return name
}

// LoadTrace reads the SWF trace at path (gzip or plain). maxJobs > 0 keeps
// only the first maxJobs jobs. A trace without any job is an error.
func LoadTrace(path string, maxJobs int) (*Trace, error) {
	jobs, h, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("swf %s: no job lines", path)
	}
	t := &Trace{Path: path, Name: TraceName(path), Jobs: jobs, Read: len(jobs), Header: h}
	if maxJobs > 0 && len(jobs) > maxJobs {
		t.Jobs = jobs[:maxJobs]
	}
	return t, nil
}

// HeaderCapacity returns the machine size the header declares and the key
// it came from: MaxProcs when present (job sizes in fields 5 and 8 count
// processors), else MaxNodes. ok is false when neither is a positive
// integer.
func (t *Trace) HeaderCapacity() (capacity int64, key string, ok bool) {
	for _, k := range []string{"MaxProcs", "MaxNodes"} {
		if v, ok := t.Header.Int(k); ok && v > 0 {
			return v, k, true
		}
	}
	return 0, "", false
}

// Capacity resolves the capacity an experiment uses for the trace: override
// when it is > 0, else the header's MaxProcs/MaxNodes. source says which,
// for the outputs ("header MaxProcs", "-capacity"). With neither, the error
// asks for -capacity.
func (t *Trace) Capacity(override int64) (capacity int64, source string, err error) {
	if override > 0 {
		return override, "-capacity", nil
	}
	if c, key, ok := t.HeaderCapacity(); ok {
		return c, "header " + key, nil
	}
	return 0, "", fmt.Errorf("trace %s: the header has no MaxProcs or MaxNodes line: give the capacity with -capacity", t.Name)
}

// Tally counts what turning a trace's jobs into requests did to them: every
// job read is either kept (possibly adjusted) or dropped for exactly one
// reason, so Kept + the drop counts == Read.
type Tally struct {
	Read int // jobs offered to the conversion
	Kept int // jobs turned into requests

	// Dropped jobs, by reason.
	NoSize   int // allocated and requested processors both unknown or 0
	TooLarge int // more processors than the capacity
	NoTime   int // no usable duration: run time 0 or unknown and no requested time
	NoSubmit int // submit time unknown
	// OutOfRange counts jobs whose times are so large (a corrupt line,
	// as a rule) that what a converter derives from them would overflow:
	// past 2^62 time units at the request's latest deadline (FromTally),
	// or past 2^40 s (the simulator's conversions).
	OutOfRange int
	Capacity   int64
	Oversized  float64 // share (0..1) of the trace's work (procs x run time) in TooLarge jobs

	// Adjusted jobs (kept, but not as the log says).
	RunAsEstimate int // requested time (field 9) unknown: the run time stands in for it
	ZeroRun       int // run time 0 or unknown but a requested time known: reserved for the requested time
	CutAtRequest  int // ran longer than requested: the actual run is cut at the request
	// OneUnit counts jobs whose run time rounded to a single time unit
	// when times are coarsened (for example divided by 60): with an
	// over-estimation factor k > 1 their request rounds up to at least 2
	// units, twice the run.
	OneUnit int

	work, tooLargeWork float64
}

// Dropped returns the number of jobs dropped for any reason.
func (t Tally) Dropped() int { return t.NoSize + t.TooLarge + t.NoTime + t.NoSubmit + t.OutOfRange }

// Observe records the work of job j (procs x run time) towards the
// oversized share; tooLarge says whether j is dropped for its size.
// Converters call it once per job read.
func (t *Tally) Observe(j Job, tooLarge bool) {
	w := float64(max(j.Procs(), 0)) * float64(max(j.Run, 0))
	t.work += w
	if tooLarge {
		t.tooLargeWork += w
	}
	if t.work > 0 {
		t.Oversized = t.tooLargeWork / t.work
	}
}

// String summarises the tally in one line for tables and progress output.
func (t Tally) String() string {
	var drops, adj []string
	add := func(list *[]string, n int, what string) {
		if n > 0 {
			*list = append(*list, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(&drops, t.NoSize, "without a size")
	if t.TooLarge > 0 {
		drops = append(drops, fmt.Sprintf("%d larger than the capacity %d (%.1f %% of the work)", t.TooLarge, t.Capacity, 100*t.Oversized))
	}
	add(&drops, t.NoTime, "without a run or requested time")
	add(&drops, t.NoSubmit, "without a submit time")
	add(&drops, t.OutOfRange, "with times too large for the time unit")
	add(&adj, t.RunAsEstimate, "without a requested time (field 9): run time used as the estimate")
	add(&adj, t.ZeroRun, "with run time 0 or unknown: requested time used")
	add(&adj, t.CutAtRequest, "ran past their requested time: actual run cut at the request")
	add(&adj, t.OneUnit, "with the run time rounded to one time unit")
	s := fmt.Sprintf("%d jobs read, %d used", t.Read, t.Kept)
	if len(drops) > 0 {
		s += "; dropped: " + strings.Join(drops, ", ")
	} else {
		s += "; none dropped"
	}
	if len(adj) > 0 {
		s += "; adjusted: " + strings.Join(adj, ", ")
	}
	return s
}
