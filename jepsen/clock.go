package jepsen

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// ClockOffsetFile is the file in a node's data directory that the agent
// reads (at most once a second) and adds, in milliseconds, to the clock it
// stamps into commands when it is the leader. It is a testing aid of the
// agent: off unless the file exists.
const ClockOffsetFile = "clock-offset"

// MaxClockJump bounds the clock nemesis's jumps. It must stay well below
// the workload's hold TTL (one hour) and its booking horizon (a week), so a
// forward jump cannot make holds expire within a run.
const MaxClockJump = 10 * time.Minute

// SetClockOffset makes node name stamp commands with its wall clock plus d.
func (c *Cluster) SetClockOffset(name string, d time.Duration) error {
	n := c.Node(name)
	if n == nil {
		return fmt.Errorf("clock offset: unknown node %q", name)
	}
	return writeClockOffset(n.DataDir, d)
}

// ClearClockOffset removes node name's clock offset; a missing file is fine.
func (c *Cluster) ClearClockOffset(name string) error {
	n := c.Node(name)
	if n == nil {
		return fmt.Errorf("clock offset: unknown node %q", name)
	}
	return clearClockOffset(n.DataDir)
}

// writeClockOffset writes the offset atomically (temporary file, rename),
// so the agent never reads half a number.
func writeClockOffset(dataDir string, d time.Duration) error {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("clock offset: %w", err)
	}
	tmp := filepath.Join(dataDir, ClockOffsetFile+".tmp")
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(d.Milliseconds(), 10)+"\n"), 0o644); err != nil {
		return fmt.Errorf("clock offset: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dataDir, ClockOffsetFile)); err != nil {
		return fmt.Errorf("clock offset: %w", err)
	}
	return nil
}

func clearClockOffset(dataDir string) error {
	err := os.Remove(filepath.Join(dataDir, ClockOffsetFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clock offset: %w", err)
	}
	return nil
}

// clockJump picks a jump of a whole number of minutes, 1 to MaxClockJump,
// forward or backward.
func clockJump(rng *rand.Rand) time.Duration {
	d := time.Duration(1+rng.IntN(int(MaxClockJump/time.Minute))) * time.Minute
	if rng.IntN(2) == 0 {
		d = -d
	}
	return d
}
