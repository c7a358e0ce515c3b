package rpc

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"testing"
)

// bomb returns a gzip stream of n zero bytes (about n/1000 compressed).
func bomb(tb testing.TB, n int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zero := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, len(zero))
		if _, err := zw.Write(zero[:k]); err != nil {
			tb.Fatal(err)
		}
		n -= k
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// connectStyle reads a decompressor the way Connect does: up to max+1
// bytes, then, when the message is too large, the rest to learn its size.
// It returns how many bytes were inflated in all.
func connectStyle(d io.Reader, max int64) (int64, error) {
	n, err := io.Copy(io.Discard, io.LimitReader(d, max+1))
	if err != nil || n <= max {
		return n, err
	}
	rest, err := io.Copy(io.Discard, d)
	return n + rest, err
}

// TestCappedGzipStopsAtTheLimit: a 64 MiB bomb is inflated only to one
// byte past the limit, then refused; a message within the limit inflates
// whole; the decompressor is reusable after Reset.
func TestCappedGzipStopsAtTheLimit(t *testing.T) {
	const max = 4 << 20
	d := newCappedGzip(max)()
	if _, err := d.Read(make([]byte, 1)); err == nil {
		t.Fatal("read before Reset succeeded")
	}
	if err := d.Reset(bytes.NewReader(bomb(t, 64<<20))); err != nil {
		t.Fatal(err)
	}
	n, err := connectStyle(d, max)
	if !errors.Is(err, errTooLarge) || n != max+1 {
		t.Fatalf("bomb: inflated %d bytes, err %v; want %d and errTooLarge", n, err, max+1)
	}
	for _, size := range []int{0, 1, max} {
		if err := d.Reset(bytes.NewReader(bomb(t, size))); err != nil {
			t.Fatal(err)
		}
		n, err := connectStyle(d, max)
		if err != nil || n != int64(size) {
			t.Fatalf("message of %d bytes: inflated %d, err %v", size, n, err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkGzipBomb shows what one 64 MiB gzip bomb (about 64 KB on the
// wire) costs the server against a 4 MiB limit: inflated the way Connect's
// own gzip reader is used (to the end, to report the size) and with the
// capped reader the server registers.
func BenchmarkGzipBomb(b *testing.B) {
	const max = 4 << 20
	z := bomb(b, 64<<20)
	b.Run("impl=connect-default", func(b *testing.B) {
		b.SetBytes(int64(len(z)))
		for b.Loop() {
			zr, err := gzip.NewReader(bytes.NewReader(z))
			if err != nil {
				b.Fatal(err)
			}
			if n, _ := connectStyle(zr, max); n != 64<<20 {
				b.Fatalf("inflated %d", n)
			}
		}
	})
	b.Run("impl=capped", func(b *testing.B) {
		b.SetBytes(int64(len(z)))
		d := newCappedGzip(max)()
		for b.Loop() {
			if err := d.Reset(bytes.NewReader(z)); err != nil {
				b.Fatal(err)
			}
			if n, err := connectStyle(d, max); n != max+1 || !errors.Is(err, errTooLarge) {
				b.Fatalf("inflated %d, %v", n, err)
			}
		}
	})
}
