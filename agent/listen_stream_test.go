package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/rpc"
)

// TestStreamOutlivesTheBodyDeadline: a Watch over HTTP/1.1 keeps receiving
// progress notices long after its request body was read, although bodies
// must make progress every 100 ms here: the deadline is lifted once the
// body is complete (otherwise the connection's read times out and cancels
// the stream).
func TestStreamOutlivesTheBodyDeadline(t *testing.T) {
	cfg, flags, err := ParseArgs([]string{"-dev", "-http-addr", "127.0.0.1:0"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, Options{Dev: flags.Dev, Logger: cfg.NewLogger(io.Discard), API: func(o *rpc.Options) { o.WatchProgress = 150 * time.Millisecond },
		BodyProgress: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	msg := []byte(`{"fromVersion":"1"}`)
	body.WriteByte(0)
	_ = binary.Write(&body, binary.BigEndian, uint32(len(msg)))
	body.Write(msg)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, a.URL()+"/ledgerd.v1.ReservationService/Watch", &body)
	req.Header.Set("Content-Type", "application/connect+json")
	tr := &http.Transport{} // plain http: HTTP/1.1
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 1 || resp.StatusCode != http.StatusOK {
		t.Fatalf("Watch: %s %s", resp.Proto, resp.Status)
	}
	// Ten progress notices are at least 1.5 s: fifteen body deadlines.
	r := bufio.NewReader(resp.Body)
	for i := range 10 {
		var hdr [5]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			t.Fatalf("stream ended after %d messages: %v", i, err)
		}
		if hdr[0]&2 != 0 {
			rest, _ := io.ReadAll(io.LimitReader(r, int64(binary.BigEndian.Uint32(hdr[1:]))))
			t.Fatalf("stream ended after %d messages: %s", i, rest)
		}
		if _, err := io.CopyN(io.Discard, r, int64(binary.BigEndian.Uint32(hdr[1:]))); err != nil {
			t.Fatal(err)
		}
	}
}
