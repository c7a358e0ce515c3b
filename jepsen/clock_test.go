package jepsen

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestClockOffsetFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n1")
	path := filepath.Join(dir, ClockOffsetFile)
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{7 * time.Minute, "420000\n"},
		{-3 * time.Minute, "-180000\n"},
		{1500 * time.Microsecond, "1\n"},
	} {
		if err := writeClockOffset(dir, tc.d); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != tc.want {
			t.Fatalf("offset %v: file %q (%v), want %q", tc.d, b, err, tc.want)
		}
		if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
			t.Fatalf("temporary file left behind: %v", err)
		}
	}
	for range 2 { // the second removal finds no file and is fine
		if err := clearClockOffset(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("offset file survived: %v", err)
		}
	}
}

// TestClockJumpBounds: jumps are whole minutes within ±MaxClockJump, never
// zero, both directions occur, and the same seed gives the same jumps.
func TestClockJumpBounds(t *testing.T) {
	a, b := rand.New(rand.NewPCG(7, 1)), rand.New(rand.NewPCG(7, 1))
	var fwd, back int
	for range 1000 {
		d := clockJump(a)
		if d != clockJump(b) {
			t.Fatal("same seed, different jumps")
		}
		if d == 0 || d%time.Minute != 0 || d > MaxClockJump || d < -MaxClockJump {
			t.Fatalf("jump %v out of bounds", d)
		}
		if d > 0 {
			fwd++
		} else {
			back++
		}
	}
	if fwd < 400 || back < 400 {
		t.Fatalf("forward %d, backward %d of 1000", fwd, back)
	}
	if MaxClockJump >= time.Hour/2 {
		t.Fatalf("MaxClockJump %v too close to the workload's hold TTL", MaxClockJump)
	}
}

func TestUnknownNodeClockOffset(t *testing.T) {
	c := &Cluster{}
	if err := c.SetClockOffset("n9", time.Minute); err == nil {
		t.Fatal("offset for an unknown node accepted")
	}
	if err := c.ClearClockOffset("n9"); err == nil {
		t.Fatal("clear for an unknown node accepted")
	}
}
