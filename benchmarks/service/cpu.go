package service

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
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

// readCPU samples the CPU time of this process and of the process trees
// rooted at pids. A tree counts every live descendant of its root and, as
// the children's times of each process (cutime, cstime), the descendants
// that have exited and been waited for: a PostgreSQL postmaster's
// backends, whether they are still connected or not. The difference of two
// samples is the CPU the tree used in between.
func readCPU(pids []int) (cpuTimes, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuTimes{}, fmt.Errorf("getrusage: %w", err)
	}
	t := cpuTimes{own: seconds(ru.Utime) + seconds(ru.Stime)}
	if len(pids) == 0 {
		return t, nil
	}
	procs, err := scanProcs()
	if err != nil {
		return cpuTimes{}, err
	}
	s, err := treeCPU(procs, pids)
	if err != nil {
		return cpuTimes{}, err
	}
	t.others = s
	return t, nil
}

func seconds(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }

// procStat is what readCPU needs of one /proc/<pid>/stat line.
type procStat struct {
	pid, ppid int
	// cpu is the process's own user + system time, children the waited-for
	// children's (cutime + cstime), in seconds.
	cpu, children float64
}

// scanProcs reads the stat line of every process in /proc. Processes that
// exit while it reads are left out: their time shows up in their parent's
// children's times once waited for.
func scanProcs() (map[int]procStat, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	out := make(map[int]procStat, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
				continue
			}
			return nil, fmt.Errorf("cpu of process %d: %w", pid, err)
		}
		ps, err := parseStat(b)
		if err != nil {
			return nil, fmt.Errorf("process %d: %w", pid, err)
		}
		ps.pid = pid
		out[pid] = ps
	}
	return out, nil
}

// treeCPU sums the own and children's CPU time of every process in the
// trees rooted at roots; each root must be present in procs.
func treeCPU(procs map[int]procStat, roots []int) (float64, error) {
	kids := map[int][]int{}
	for pid, p := range procs {
		kids[p.ppid] = append(kids[p.ppid], pid)
	}
	seen := map[int]bool{}
	var sum float64
	for _, r := range roots {
		if _, ok := procs[r]; !ok {
			return 0, fmt.Errorf("cpu of process %d: no such process", r)
		}
		stack := []int{r}
		for len(stack) > 0 {
			pid := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[pid] {
				continue // a root inside another root's tree counts once
			}
			seen[pid] = true
			p := procs[pid]
			sum += p.cpu + p.children
			ks := kids[pid]
			slices.Sort(ks)
			stack = append(stack, ks...)
		}
	}
	return sum, nil
}

// parseStat reads fields 4 (ppid) and 14 to 17 (utime, stime, cutime,
// cstime) of a /proc/<pid>/stat line. The second field, the command name
// in parentheses, may itself hold spaces and parentheses, so fields are
// counted from the last ')'.
func parseStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("proc stat %q: no command field", b)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state): ppid is field 4, utime field 14 ... cstime 17.
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("proc stat: %d fields after the command, want at least 15", len(f))
	}
	var ps procStat
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return procStat{}, fmt.Errorf("proc stat: ppid field %q: %w", f[1], err)
	}
	ps.ppid = ppid
	var v [4]float64
	for k, s := range f[11:15] {
		x, err := strconv.ParseUint(string(s), 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("proc stat: cpu field %d %q: %w", 14+k, s, err)
		}
		v[k] = float64(x) / clockTicks
	}
	ps.cpu, ps.children = v[0]+v[1], v[2]+v[3]
	return ps, nil
}

// loadAvg1 returns the machine's one-minute load average (/proc/loadavg),
// or 0 where it cannot be read: reports print it beside each cell, since
// on shared cores throughput follows it.
func loadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	v, err := parseLoadAvg(b)
	if err != nil {
		return 0
	}
	return v
}

// parseLoadAvg reads the first field of a /proc/loadavg line.
func parseLoadAvg(b []byte) (float64, error) {
	f := bytes.Fields(b)
	if len(f) == 0 {
		return 0, errors.New("loadavg: empty")
	}
	v, err := strconv.ParseFloat(string(f[0]), 64)
	if err != nil {
		return 0, fmt.Errorf("loadavg: first field %q: %w", f[0], err)
	}
	return v, nil
}
