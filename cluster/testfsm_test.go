package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/hashicorp/raft"
)

// kvFSM is the test FSM: commands are "reqid|payload" (optionally followed
// by "|t=<millis>" added by testStamp). The first command with a given
// request ID is appended to the log of entries and answered with
// "ok:<index>"; a retry with the same ID gets the first answer back and
// appends nothing. Commands starting with "fail|" make Apply return an
// error; "tick" commands only count. An entry made by testGroup
// ("group" and its members, each after groupSep) applies its members in
// order and answers []any, one response per member.
type kvFSM struct {
	mu      sync.Mutex
	Entries []string          // payloads in apply order
	Results map[string]string // reqid -> first result
	Ticks   int
	Stamped int // commands that carried a leader timestamp
	// Logged counts the log commands applied (a group is one);
	// Groups the group entries among them.
	Logged, Groups int
}

func newKVFSM() *kvFSM { return &kvFSM{Results: map[string]string{}} }

func (f *kvFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Logged++
	s := string(l.Data)
	if rest, ok := strings.CutPrefix(s, "group"+groupSep); ok {
		f.Groups++
		var out []any
		for _, m := range strings.Split(rest, groupSep) {
			out = append(out, f.applyCmd(m, l))
		}
		return out
	}
	return f.applyCmd(s, l)
}

// applyCmd applies one command of entry l.
func (f *kvFSM) applyCmd(s string, l *raft.Log) any {
	if s == "tick" || strings.HasPrefix(s, "tick|") {
		f.Ticks++
		return []byte("tick")
	}
	if strings.Contains(s, "|t=") {
		f.Stamped++
		s = s[:strings.LastIndex(s, "|t=")]
	}
	reqid, payload, ok := strings.Cut(s, "|")
	if !ok {
		panic(fmt.Sprintf("kvFSM: undecodable entry %q", l.Data))
	}
	if reqid == "fail" {
		return fmt.Errorf("refused %s", payload)
	}
	if r, dup := f.Results[reqid]; dup {
		return []byte(r)
	}
	f.Entries = append(f.Entries, payload)
	r := fmt.Sprintf("ok:%d", len(f.Entries))
	f.Results[reqid] = r
	return []byte(r)
}

func (f *kvFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	return bytesSnapshot(b), nil
}

func (f *kvFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var fresh kvFSM
	if err := json.NewDecoder(rc).Decode(&fresh); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Entries, f.Results, f.Ticks, f.Stamped = fresh.Entries, fresh.Results, fresh.Ticks, fresh.Stamped
	f.Logged, f.Groups = fresh.Logged, fresh.Groups
	if f.Results == nil {
		f.Results = map[string]string{}
	}
	return nil
}

func (f *kvFSM) entries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.Entries...)
}

// logged returns how many log commands f applied and how many of them
// were groups.
func (f *kvFSM) logged() (entries, groups int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Logged, f.Groups
}

func (f *kvFSM) count(payload string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := 0
	for _, e := range f.Entries {
		if e == payload {
			c++
		}
	}
	return c
}

type bytesSnapshot []byte

func (b bytesSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := io.Copy(sink, bytes.NewReader(b)); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (b bytesSnapshot) Release() {}

// groupSep separates the members of a test group entry.
const groupSep = "\x1e"

// testGroup is a Config.Group for the test FSM: it groups up to
// testGroupMax stamped commands that carry the same stamp, leaving alone
// ticks and commands whose request ID is "solo".
func testGroup(cmds [][]byte) ([]byte, int) {
	groupable := func(c []byte) bool {
		return !bytes.HasPrefix(c, []byte("solo|")) && !bytes.HasPrefix(c, []byte("tick"))
	}
	stamp := func(c []byte) string {
		s := string(c)
		if i := strings.LastIndex(s, "|t="); i >= 0 {
			return s[i:]
		}
		return ""
	}
	n := 0
	for n < len(cmds) && n < testGroupMax && groupable(cmds[n]) && stamp(cmds[n]) == stamp(cmds[0]) {
		n++
	}
	if n < 2 {
		return nil, 1
	}
	entry := []byte("group")
	for _, c := range cmds[:n] {
		entry = append(append(entry, groupSep...), c...)
	}
	return entry, n
}

// testGroupMax caps testGroup's groups small, so that a batch makes
// several.
const testGroupMax = 3

// testStamp appends the leader's time, the way fsm.Stamp sets a field.
func testStamp(cmd []byte, now int64) ([]byte, error) {
	if bytes.HasPrefix(cmd, []byte("badstamp")) {
		return nil, fmt.Errorf("cannot stamp %q", cmd)
	}
	return fmt.Appendf(append([]byte(nil), cmd...), "|t=%d", now), nil
}
