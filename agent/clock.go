package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockOffsetFile is the name, inside data_dir, of the testing aid that
// skews the clock this server stamps into commands when it leads. It holds
// one integer: milliseconds to add to the wall clock (negative moves it
// back). Without the file the offset is zero. Chaos tests write it to
// simulate a leader whose clock jumps; never create it in production.
const clockOffsetFile = "clock-offset"

// clockOffsetRecheck is how often the offset file is read at most.
const clockOffsetRecheck = time.Second

// skewedClock is the wall clock plus the offset read from clockOffsetFile.
// Log time never runs backwards whatever it returns: the state machine
// takes the larger of the previous log time and each stamp.
type skewedClock struct {
	path string
	log  *slog.Logger
	now  func() time.Time // the wall clock; time.Now outside tests

	mu      sync.Mutex
	checked time.Time // wall time of the last read; zero: never
	offset  time.Duration
	bad     string // last content reported as invalid
}

func newSkewedClock(dataDir string, log *slog.Logger) *skewedClock {
	return &skewedClock{path: filepath.Join(dataDir, clockOffsetFile), log: log, now: time.Now}
}

// Now returns the wall time plus the current offset, re-reading the file
// when the last read is at least clockOffsetRecheck old.
func (c *skewedClock) Now() time.Time {
	wall := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.checked.IsZero() || wall.Sub(c.checked) >= clockOffsetRecheck || wall.Before(c.checked) {
		c.checked = wall
		c.reload()
	}
	return wall.Add(c.offset)
}

// reload reads the offset file; a missing file means no offset, an
// unreadable or malformed one keeps the previous offset and is logged once.
func (c *skewedClock) reload() {
	off, err := readClockOffset(c.path)
	if err != nil {
		if msg := err.Error(); msg != c.bad {
			c.bad = msg
			c.log.Warn("ignoring clock offset file", "err", err)
		}
		return
	}
	c.bad = ""
	if off != c.offset {
		c.log.Warn("clock offset changed (testing aid)", "file", c.path, "offset", off)
		c.offset = off
	}
}

// readClockOffset parses the offset file; a missing file is offset zero.
func readClockOffset(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("clock offset: %w", err)
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("clock offset %s: want integer milliseconds: %w", path, err)
	}
	const limit = 100 * 365 * 24 * time.Hour / time.Millisecond
	if ms > int64(limit) || ms < -int64(limit) {
		return 0, fmt.Errorf("clock offset %s: %d ms is beyond ±100 years", path, ms)
	}
	return time.Duration(ms) * time.Millisecond, nil
}
