package service

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// clockTicks is the unit of the CPU times in /proc/<pid>/stat (USER_HZ),
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// cpuTimes is CPU time (user + system) used so far, in seconds, by this
// process and by other processes (a system's servers).
type cpuTimes struct {
	own, others float64
}

// readCPU samples the CPU time of this process and of pids.
func readCPU(pids []int) (cpuTimes, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuTimes{}, fmt.Errorf("getrusage: %w", err)
	}
	t := cpuTimes{own: seconds(ru.Utime) + seconds(ru.Stime)}
	for _, pid := range pids {
		s, err := procCPU(pid)
		if err != nil {
			return cpuTimes{}, err
		}
		t.others += s
	}
	return t, nil
}

func seconds(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }

// procCPU returns utime + stime of pid from /proc/<pid>/stat.
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("cpu of process %d: %w", pid, err)
	}
	return parseStatCPU(b)
}

// parseStatCPU reads fields 14 and 15 (utime, stime) of a /proc/<pid>/stat
// line. The second field, the command name in parentheses, may itself hold
// spaces and parentheses, so fields are counted from the last ')'.
func parseStatCPU(b []byte) (float64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("proc stat %q: no command field", b)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state): utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("proc stat: %d fields after the command, want at least 13", len(f))
	}
	var sum float64
	for _, s := range f[11:13] {
		v, err := strconv.ParseUint(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("proc stat: cpu field %q: %w", s, err)
		}
		sum += float64(v) / clockTicks
	}
	return sum, nil
}
