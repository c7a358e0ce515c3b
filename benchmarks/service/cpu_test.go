package service

import (
	"os"
	"testing"
)

func TestParseStatCPU(t *testing.T) {
	for _, c := range []struct {
		name, line string
		want       float64
		ok         bool
	}{
		{"plain", "4242 (ledgerd) S 1 4242 4242 0 -1 4194560 5120 0 0 0 1234 566 0 0 20 0 12 0 100 0 0", 18.00, true},
		{"name with spaces and parens", "7 (a b) (c)) R 1 7 7 0 -1 0 0 0 0 0 250 50 0 0 20 0 1 0 1 0 0", 3.00, true},
		{"no command", "7 a b", 0, false},
		{"too short", "7 (x) S 1 2 3", 0, false},
		{"not a number", "7 (x) S 1 7 7 0 -1 0 0 0 0 0 abc 50 0", 0, false},
	} {
		got, err := parseStatCPU([]byte(c.line))
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
	x := 0
	for i := range 300_000_000 {
		x ^= i * i
	}
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
