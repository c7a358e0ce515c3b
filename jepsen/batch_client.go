package jepsen

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	ledgerclient "github.com/ledgerd/ledgerd/rpc/client"
)

// Client modes of a campaign (Config.Client).
const (
	// ClientUnary sends every operation as its own unary Connect call.
	ClientUnary = "unary"
	// ClientBatch sends the reservation operations through the product's
	// coalescing client, so that concurrent operations on one node travel
	// together in ReservationService.Batch calls.
	ClientBatch = "batch"
)

// BatchClient is the Client for one node that sends hold, reserve, commit,
// abort, cancel, modify and get through rpc/client with coalescing on:
// operations the workers issue concurrently to this node share Batch
// calls. It makes one attempt per operation against this node only (the
// workload does its own retries), and classifies answers exactly as
// ConnectClient does: rpc/client hands every operation the error its unary
// call would have returned, and a Batch call that failed as a whole the
// transport error, which is "unknown" for a write unless it proves that
// nothing was sent (connection refused). Find, List, Leader and resource
// setup go through the embedded ConnectClient.
type BatchClient struct {
	*ConnectClient
	c   *ledgerclient.Client
	ttl time.Duration
}

// NewBatchClient returns a batching client for the node whose API listens
// at addr; plain serves the calls that are not batched and shares its ID
// map. Every Batch call is counted in stats.
func NewBatchClient(addr string, plain *ConnectClient, stats *BatchStats) (*BatchClient, error) {
	t := &http.Transport{
		DialContext: (&net.Dialer{Timeout: time.Second}).DialContext,
		// A copy: an HTTP/2 transport adds "h2" to the configuration's
		// ALPN protocols, which must not leak into the unary client's
		// HTTP/1.1 transport (the server would expect HTTP/2 there).
		TLSClientConfig:     plain.tls.Clone(),
		TLSHandshakeTimeout: time.Second,
		IdleConnTimeout:     5 * time.Second,
	}
	// HTTP/2 as rpc/client speaks it: over TLS (ALPN) to a secured node,
	// without TLS (h2c) to an insecure one.
	p := new(http.Protocols)
	if plain.tls != nil {
		p.SetHTTP2(true)
	} else {
		p.SetUnencryptedHTTP2(true)
	}
	t.Protocols = p
	// With its own HTTPClient, rpc/client takes only the scheme from TLS
	// (https for the addresses the servers name as leader).
	c, err := ledgerclient.New([]string{addr}, ledgerclient.Options{
		MaxAttempts: 1,
		Token:       plain.token,
		TLS:         plain.tls,
		HTTPClient:  &http.Client{Transport: batchCounter{next: t, stats: stats}},
	})
	if err != nil {
		return nil, fmt.Errorf("batch client for %s: %w", addr, err)
	}
	return &BatchClient{ConnectClient: plain, c: c, ttl: plain.ttl}, nil
}

// Invoke implements Client.
func (b *BatchClient) Invoke(ctx context.Context, in Input) (Output, error) {
	if in.Op == OpFind {
		return b.ConnectClient.Invoke(ctx, in)
	}
	var sid string
	if in.Op != OpHold && in.Op != OpReserve {
		var ok bool
		if sid, ok = b.ids.get(in.ID); !ok {
			return Output{Code: CodeFailed}, fmt.Errorf("%s %s: server id unknown", in.Op, in.ID)
		}
	}
	labels := map[string]string{labelKey: in.ID}
	var (
		r   *ledgerdv1.Reservation
		err error
	)
	switch in.Op {
	case OpHold:
		r, err = b.c.Hold(ctx, &ledgerdv1.HoldRequest{Shape: toShape(in), HoldTtl: durationpb.New(b.ttl), Labels: labels, IdempotencyKey: in.ID})
		if err == nil {
			b.ids.set(in.ID, r.GetId())
		}
	case OpReserve:
		r, err = b.c.Reserve(ctx, &ledgerdv1.ReserveRequest{Shape: toShape(in), Labels: labels, IdempotencyKey: in.ID})
		if err == nil {
			b.ids.set(in.ID, r.GetId())
		}
	case OpCommit:
		r, err = b.c.Commit(ctx, sid, "")
	case OpAbort:
		if _, err = b.c.Abort(ctx, sid, ""); err == nil {
			return Output{Code: CodeOK}, nil
		}
	case OpCancel:
		if _, err = b.c.Cancel(ctx, sid, ""); err == nil {
			return Output{Code: CodeOK}, nil
		}
	case OpModify:
		r, err = b.c.Modify(ctx, &ledgerdv1.ModifyRequest{Id: sid, Shape: toShape(in), HoldTtl: durationpb.New(b.ttl)})
		if err == nil {
			return Output{Code: CodeOK, Start: ms(r.GetPending().GetStart())}, nil
		}
	case OpGet:
		if r, err = b.c.Get(ctx, sid); err == nil {
			return Output{Code: CodeOK, Start: ms(r.GetStart()), Status: statusOf[r.GetState()]}, nil
		}
	default:
		return Output{Code: CodeInvalid}, fmt.Errorf("op %q: not supported", in.Op)
	}
	if err != nil {
		return classify(err, in.Op != OpGet), err
	}
	return Output{Code: CodeOK, Start: ms(r.GetStart())}, nil
}

// batchPath is the URL path suffix of ReservationService.Batch.
const batchPath = "/ledgerd.v1.ReservationService/Batch"

// batchCounter counts the operations of every Batch request it carries,
// read off the wire, so a campaign can show that operations really did
// travel together.
type batchCounter struct {
	next  http.RoundTripper
	stats *BatchStats
}

// RoundTrip implements http.RoundTripper.
func (t batchCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, batchPath) || req.Body == nil {
		return t.next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read batch request: %w", err)
	}
	if n, err := batchOps(body, req.Header.Get("Content-Encoding")); err == nil {
		t.stats.add(n)
	} else {
		t.stats.undecodable()
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.next.RoundTrip(r)
}

// batchOps decodes a Connect unary BatchRequest body and returns its
// operation count.
func batchOps(body []byte, encoding string) (int, error) {
	if encoding == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return 0, fmt.Errorf("batch request: %w", err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			return 0, fmt.Errorf("batch request: %w", err)
		}
	}
	var m ledgerdv1.BatchRequest
	if err := proto.Unmarshal(body, &m); err != nil {
		return 0, fmt.Errorf("batch request: %w", err)
	}
	return len(m.GetOperations()), nil
}

// BatchStats counts Batch calls by size. Safe for concurrent use.
type BatchStats struct {
	mu     sync.Mutex
	sizes  map[int]int
	broken int
}

func (s *BatchStats) add(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sizes == nil {
		s.sizes = map[int]int{}
	}
	s.sizes[n]++
}

func (s *BatchStats) undecodable() {
	s.mu.Lock()
	s.broken++
	s.mu.Unlock()
}

// Summary returns the figures for the report.
func (s *BatchStats) Summary() BatchSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := BatchSummary{Undecodable: s.broken, Sizes: map[string]int{}}
	for n, k := range s.sizes {
		out.Calls += k
		out.Ops += n * k
		out.Max = max(out.Max, n)
		if n > 1 {
			out.Multi += k
			out.OpsInMulti += n * k
		}
		out.Sizes[sizeBucket(n)] += k
	}
	return out
}

// sizeBucket names the histogram bucket of a batch of n operations.
func sizeBucket(n int) string {
	switch {
	case n <= 2:
		return fmt.Sprint(n)
	case n <= 4:
		return "3-4"
	case n <= 8:
		return "5-8"
	default:
		return "9+"
	}
}

// BatchSummary describes the Batch calls of a campaign in batch mode.
type BatchSummary struct {
	// Calls is the number of Batch calls sent, Ops the operations in them.
	Calls int `json:"calls"`
	Ops   int `json:"ops"`
	// Multi counts calls that carried more than one operation, and
	// OpsInMulti the operations in those.
	Multi      int `json:"multi_op_calls"`
	OpsInMulti int `json:"ops_in_multi_op_calls"`
	Max        int `json:"max_ops"`
	// Sizes is a histogram of calls by operation count (1, 2, 3-4, 5-8, 9+).
	Sizes map[string]int `json:"calls_by_size"`
	// Undecodable counts request bodies the counter could not read.
	Undecodable int `json:"undecodable,omitempty"`
}

// Text renders the summary on one line.
func (s BatchSummary) Text() string {
	mean := 0.0
	if s.Calls > 0 {
		mean = float64(s.Ops) / float64(s.Calls)
	}
	return fmt.Sprintf("%d Batch calls carrying %d operations (mean %.2f, max %d); %d calls with more than one operation carried %d; by size 1:%d 2:%d 3-4:%d 5-8:%d 9+:%d",
		s.Calls, s.Ops, mean, s.Max, s.Multi, s.OpsInMulti, s.Sizes["1"], s.Sizes["2"], s.Sizes["3-4"], s.Sizes["5-8"], s.Sizes["9+"])
}

// batchClients makes and keeps one BatchClient per node of a cluster.
type batchClients struct {
	cl    *Cluster
	stats *BatchStats

	mu sync.Mutex
	m  map[string]*BatchClient
}

// client returns the batching client for node name; a client that cannot
// be built (a malformed address) falls back to unary calls, which the
// batch statistics then show.
func (b *batchClients) client(name string) Client {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.m[name]; ok {
		return c
	}
	plain := b.cl.connect(name)
	n := b.cl.Node(name)
	if n == nil {
		return plain
	}
	c, err := NewBatchClient(n.APIAddr(), plain, b.stats)
	if err != nil {
		return plain
	}
	if b.m == nil {
		b.m = map[string]*BatchClient{}
	}
	b.m[name] = c
	return c
}
