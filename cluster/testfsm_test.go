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
// error; "tick" commands only count.
type kvFSM struct {
	mu      sync.Mutex
	Entries []string          // payloads in apply order
	Results map[string]string // reqid -> first result
	Ticks   int
	Stamped int // commands that carried a leader timestamp
}

func newKVFSM() *kvFSM { return &kvFSM{Results: map[string]string{}} }

func (f *kvFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := string(l.Data)
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

// testStamp appends the leader's time, the way fsm.Stamp sets a field.
func testStamp(cmd []byte, now int64) ([]byte, error) {
	if bytes.HasPrefix(cmd, []byte("badstamp")) {
		return nil, fmt.Errorf("cannot stamp %q", cmd)
	}
	return fmt.Appendf(append([]byte(nil), cmd...), "|t=%d", now), nil
}
