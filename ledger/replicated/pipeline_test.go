package replicated

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/cluster"
)

// scriptedLog is a BatchLog that records the calls the pipeline makes
// and answers each write with what result says.
type scriptedLog struct {
	result func(cmd []byte) cluster.Result
	mu     sync.Mutex
	calls  []string
}

func (l *scriptedLog) record(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, s)
}

func (l *scriptedLog) Apply(ctx context.Context, cmd []byte) ([]byte, error) {
	r := l.ApplyBatch(ctx, [][]byte{cmd})[0]
	return r.Data, r.Err
}

func (l *scriptedLog) ReadBarrier(context.Context) error {
	l.record("barrier")
	return nil
}

func (l *scriptedLog) ApplyBatch(_ context.Context, cmds [][]byte) []cluster.Result {
	out := make([]cluster.Result, len(cmds))
	names := make([]string, len(cmds))
	for i, c := range cmds {
		out[i], names[i] = l.result(c), string(c)
	}
	l.record(fmt.Sprintf("apply %v", names))
	return out
}

var (
	local     = cluster.Result{Data: []byte("r"), Value: struct{}{}}
	forwarded = cluster.Result{Data: []byte("r")}
	refused   = cluster.Result{Err: cluster.ErrNotLeader}
)

// TestPipelineWritesServeTheBarrier runs one batch of reads and writes
// through the pipeline and checks which log calls it makes: the writes go
// first, in operation order, and the reads' barrier is skipped only when
// this node applied every write as the leader.
func TestPipelineWritesServeTheBarrier(t *testing.T) {
	cases := []struct {
		name   string
		ops    []string // "w<name>" writes, "r" reads a barrier
		result func(cmd []byte) cluster.Result
		want   []string
	}{
		{"reads alone take a barrier", []string{"r", "r"}, nil, []string{"barrier"}},
		{"writes alone", []string{"wb", "wa"}, func([]byte) cluster.Result { return local }, []string{"apply [wb wa]"}},
		{"writes applied here serve the reads", []string{"r", "wa", "r", "wb"},
			func([]byte) cluster.Result { return local }, []string{"apply [wa wb]"}},
		{"forwarded writes do not", []string{"r", "wa", "wb"},
			func([]byte) cluster.Result { return forwarded }, []string{"apply [wa wb]", "barrier"}},
		{"one forwarded write is enough to need one", []string{"wa", "r", "wb"},
			func(c []byte) cluster.Result {
				if string(c) == "wb" {
					return forwarded
				}
				return local
			}, []string{"apply [wa wb]", "barrier"}},
		{"refused writes do not", []string{"wa", "r"},
			func([]byte) cluster.Result { return refused }, []string{"apply [wa]", "barrier"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log := &scriptedLog{result: tc.result}
			p := newPipeline(log, len(tc.ops), nil)
			ctx := context.Background()
			ran := make(chan struct{})
			go func() {
				defer close(ran)
				p.Run(ctx)
			}()
			errs := make(chan error, len(tc.ops))
			for i, op := range tc.ops {
				s := pipeSlot{p: p, slot: i}
				go func() {
					defer p.Done(i)
					if op == "r" {
						errs <- s.ReadBarrier(ctx)
						return
					}
					r := s.ApplyResult(ctx, []byte(op))
					if r.Err != nil && !errors.Is(r.Err, cluster.ErrNotLeader) {
						errs <- r.Err
						return
					}
					errs <- nil
				}()
			}
			deadline := time.After(time.Minute)
			for range tc.ops {
				select {
				case err := <-errs:
					if err != nil {
						t.Fatal(err)
					}
				case <-deadline:
					t.Fatal("the batch's operations were not all answered within a minute")
				}
			}
			select {
			case <-ran:
			case <-deadline:
				t.Fatal("the pipeline did not return within a minute of its operations")
			}
			if !slices.Equal(log.calls, tc.want) {
				t.Fatalf("log calls %q, want %q", log.calls, tc.want)
			}
		})
	}
}
