// Command pgostrip rewrites a gzipped pprof CPU profile so that it holds no
// absolute file paths of the machine it was taken on: every string of the
// profile's string table that is an absolute path becomes the part after the
// last of the prefixes given (the repository, GOROOT's src, the module
// cache), or else its base name (the profiled binaries' own paths).
//
//	go run ./benchmarks/pgo/cmd/pgostrip -trim "$PWD/,$(go env GOROOT)/src/,$(go env GOMODCACHE)/" IN.pgo OUT.pgo
//
// Profile-guided optimisation matches a profile by function names and line
// offsets within functions, which this leaves as they are; the committed
// cmd/ledgerd/default.pgo is stripped so that the repository holds no paths
// of a maintainer's machine. It must not change anything but those strings.
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/ledgerd/ledgerd/internal/pprofstr"
)

func main() {
	trim := flag.String("trim", "", "comma-separated path prefixes to cut from absolute paths")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: pgostrip [-trim PREFIXES] IN.pgo OUT.pgo")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	var prefixes []string
	for p := range strings.SplitSeq(*trim, ",") {
		if p != "" {
			prefixes = append(prefixes, p)
		}
	}
	if err := run(flag.Arg(0), flag.Arg(1), prefixes); err != nil {
		fmt.Fprintln(os.Stderr, "pgostrip:", err)
		os.Exit(1)
	}
}

func run(in, out string, prefixes []string) error {
	raw, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("%s: not a gzipped profile: %w", in, err)
	}
	prof, err := io.ReadAll(zr)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	stripped, n, err := strip(prof, prefixes)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(stripped); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Printf("pgostrip: %d absolute paths rewritten, %s written\n", n, out)
	return nil
}

// strip returns the profile prof with each absolute path of its string
// table rewritten (relative), and how many it rewrote. Every other field
// is copied byte for byte.
func strip(prof []byte, prefixes []string) ([]byte, int, error) {
	return pprofstr.Map(prof, func(s string) string { return relative(s, prefixes) })
}

// relative returns s without the longest of prefixes it starts with when s
// is an absolute path, its base name when none matches, and s otherwise;
// what it returns for an absolute path never starts with a slash.
func relative(s string, prefixes []string) string {
	if !strings.HasPrefix(s, "/") {
		return s
	}
	best := ""
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) && len(p) > len(best) {
			best = p
		}
	}
	r := path.Base(s)
	if best != "" {
		r = strings.TrimPrefix(s, best)
	}
	return strings.TrimLeft(r, "/")
}
