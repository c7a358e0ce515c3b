package service

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
)

func TestParseStat(t *testing.T) {
	for _, c := range []struct {
		name, line string
		want       procStat
		ok         bool
	}{
		{"plain", "4242 (ledgerd) S 1 4242 4242 0 -1 4194560 5120 0 0 0 1234 566 7 3 20 0 12 0 100 0 0", procStat{ppid: 1, cpu: 18.00, children: 0.10}, true},
		{"name with spaces and parens", "7 (a b) (c)) R 9 7 7 0 -1 0 0 0 0 0 250 50 0 0 20 0 1 0 1 0 0", procStat{ppid: 9, cpu: 3.00}, true},
		{"no command", "7 a b", procStat{}, false},
		{"too short", "7 (x) S 1 7 7 0 -1 0 0 0 0 0 250 50 0", procStat{}, false},
		{"cpu not a number", "7 (x) S 1 7 7 0 -1 0 0 0 0 0 abc 50 0 0 20", procStat{}, false},
		{"ppid not a number", "7 (x) S - 7 7 0 -1 0 0 0 0 0 250 50 0 0 20", procStat{}, false},
	} {
		got, err := parseStat([]byte(c.line))
		if (err == nil) != c.ok || c.ok && got != c.want {
			t.Errorf("%s: got %+v, %v; want %+v (ok %v)", c.name, got, err, c.want, c.ok)
		}
	}
}

// TestTreeCPU: a tree is its root, every live descendant and their
// waited-for children's times; processes outside it are not counted, and
// a root inside another root's tree counts once.
func TestTreeCPU(t *testing.T) {
	procs := map[int]procStat{
		1:  {pid: 1, ppid: 0, cpu: 1000, children: 1000}, // init: never counted
		10: {pid: 10, ppid: 1, cpu: 1, children: 20},     // a postmaster; 20 s of exited backends
		11: {pid: 11, ppid: 10, cpu: 2},                  // a backend
		12: {pid: 12, ppid: 10, cpu: 3},                  // the WAL writer
		13: {pid: 13, ppid: 12, cpu: 4},                  // a grandchild
		20: {pid: 20, ppid: 1, cpu: 100},                 // an unrelated process
		30: {pid: 30, ppid: 1, cpu: 5, children: 0.5},    // a second root (the standby)
	}
	for _, c := range []struct {
		name  string
		roots []int
		want  float64
		ok    bool
	}{
		{"one tree", []int{10}, 30, true},
		{"two trees", []int{10, 30}, 35.5, true},
		{"a subtree", []int{12}, 7, true},
		{"root inside another tree", []int{10, 12}, 30, true},
		{"no roots", nil, 0, true},
		{"missing root", []int{10, 99}, 0, false},
	} {
		got, err := treeCPU(procs, c.roots)
		if (err == nil) != c.ok || c.ok && got != c.want {
			t.Errorf("%s: got %v, %v; want %v (ok %v)", c.name, got, err, c.want, c.ok)
		}
	}
}

// TestReadCPUCountsWork burns CPU and checks that both this process and a
// process named by pid (itself) see the time go up.
func TestReadCPUCountsWork(t *testing.T) {
	before, err := readCPU([]int{os.Getpid()})
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	x := burn(300_000_000)
	after, err := readCPU([]int{os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if after.own-before.own < 0.05 || after.others-before.others < 0.05 {
		t.Fatalf("CPU went from %+v to %+v after busy work (%d)", before, after, x)
	}
	if _, err := readCPU([]int{-1}); err == nil {
		t.Fatal("pid -1 accepted")
	}
}

func burn(n int) int {
	x := 0
	for i := range n {
		x ^= i * i
	}
	return x
}

// TestReadCPUCountsChildren: a child process's CPU counts in its parent's
// tree while it runs and, once it has exited and been waited for, stays
// counted (as the parent's children's time).
func TestReadCPUCountsChildren(t *testing.T) {
	if os.Getenv("LEDGERD_CPU_CHILD") == "1" {
		fmt.Println(burn(300_000_000))
		_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes stdin
		return
	}
	self := []int{os.Getpid()}
	before, err := readCPU(self)
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReadCPUCountsChildren$")
	cmd.Env = append(os.Environ(), "LEDGERD_CPU_CHILD=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The child prints once it has burnt its CPU, then waits for stdin.
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		t.Fatalf("child: %v", err)
	}
	running, err := readCPU(self)
	if err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	reaped, err := readCPU(self)
	if err != nil {
		t.Fatal(err)
	}
	own := reaped.own - before.own
	if d := running.others - before.others; d < 0.05+own {
		t.Fatalf("running child: tree CPU went up %.2fs (this process %.2fs), want the child's burn on top", d, own)
	}
	if reaped.others < running.others {
		t.Fatalf("tree CPU fell from %.2fs to %.2fs when the child was waited for", running.others, reaped.others)
	}
}

func TestParseLoadAvg(t *testing.T) {
	for _, c := range []struct {
		line string
		want float64
		ok   bool
	}{
		{"10.22 6.45 3.97 3/104 21316\n", 10.22, true},
		{"0.00 0.01 0.05 1/1 1", 0, true},
		{"", 0, false},
		{"x 1 2", 0, false},
	} {
		got, err := parseLoadAvg([]byte(c.line))
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%q: got %v, %v; want %v (ok %v)", c.line, got, err, c.want, c.ok)
		}
	}
}
