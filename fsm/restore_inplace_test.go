package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// inPlaceSnapshot hands RestoreWith a snapshot's bytes in place
// (SnapshotBytes), as a mapped file does. Release overwrites them, as an
// unmapped page would fault: a state that kept a reference into them
// would then hold garbage. Read fails: the bytes must be used in place.
type inPlaceSnapshot struct {
	data     []byte
	released int
	closed   bool
}

func (s *inPlaceSnapshot) Read([]byte) (int, error) {
	return 0, errors.New("read: the bytes are in place")
}
func (s *inPlaceSnapshot) SnapshotBytes() []byte { return s.data }
func (s *inPlaceSnapshot) ReleaseSnapshotBytes() {
	s.released++
	for i := range s.data {
		s.data[i] = 0xa5
	}
}
func (s *inPlaceSnapshot) Close() error { s.closed = true; return nil }

// TestRestoreInPlace: a snapshot restored from bytes in place (a mapped
// file) gives the state a stream restore gives, byte for byte, even
// though the bytes are overwritten the moment RestoreWith releases them,
// which it does exactly once and before it returns; and a bad snapshot
// in place is refused with the stream's error, its bytes released too.
func TestRestoreInPlace(t *testing.T) {
	var snaps [][]byte
	for _, seed := range seeds() {
		g := &gen{r: rand.New(rand.NewPCG(seed, 0x1a9ace)), now: 1_000}
		h := newHarness(t, propConfig)
		for i, cmd := range g.stream(t, *propSteps) {
			if res, err := DecodeResult(h.f.ApplyCommand(uint64(i+1), cmd)); err == nil {
				g.ids = append(g.ids, resultIDs(res)...)
			}
		}
		snaps = append(snaps, snapshotBytes(t, h.f))
	}
	files, err := filepath.Glob(filepath.Join("testdata", "snapshot-*.golden"))
	if err != nil || len(files) == 0 {
		t.Fatalf("golden snapshots: %v %v", files, err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, b)
	}
	for i, snap := range snaps {
		for name, run := range stageRunners {
			t.Run(fmt.Sprintf("snapshot=%d/%s", i, name), func(t *testing.T) {
				want := snapshotBytes(t, restoredWith(t, propConfig, snap, run))
				src := &inPlaceSnapshot{data: bytes.Clone(snap)}
				f, err := New(propConfig)
				if err != nil {
					t.Fatal(err)
				}
				if err := f.RestoreWith(src, run); err != nil {
					t.Fatalf("restore in place: %v", err)
				}
				if src.released != 1 || !src.closed {
					t.Fatalf("released %d times, closed %v: want once, and closed", src.released, src.closed)
				}
				if got := snapshotBytes(t, f); !bytes.Equal(got, want) {
					t.Fatal("the state restored in place writes another snapshot than a stream restore's")
				}
			})
		}
	}
	// A refused snapshot: the same error as from the stream, the state
	// untouched.
	bad := bytes.Clone(snaps[0])
	bad[len(bad)/2] ^= 0xff
	streamErr := func() error {
		f, err := New(propConfig)
		if err != nil {
			t.Fatal(err)
		}
		return f.RestoreWith(&inPlaceSnapshot{data: bytes.Clone(bad)}, nil)
	}()
	f, err := New(propConfig)
	if err != nil {
		t.Fatal(err)
	}
	wantErr := f.Restore(readerCloser{bytes.NewReader(bad)})
	if (streamErr == nil) != (wantErr == nil) || (wantErr != nil && streamErr.Error() != wantErr.Error()) {
		t.Fatalf("bad snapshot in place: %v; from the stream: %v", streamErr, wantErr)
	}
}

type readerCloser struct{ *bytes.Reader }

func (readerCloser) Close() error { return nil }
