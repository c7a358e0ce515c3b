// Package testbin builds the ledgerd binary for tests that run it as a
// real process (config checks, metrics scrapes, rehearsals): from this
// tree (Ledgerd) or as of an older revision from git history (AtRevision,
// for rolling-upgrade tests). It is test support only: product code must
// not import it.
package testbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	once sync.Once
	bin  string
	err  error
)

// Ledgerd returns the path of a ledgerd binary built once per test process
// from the module that contains the working directory. Call Cleanup from
// TestMain to remove it.
func Ledgerd(t testing.TB) string {
	t.Helper()
	once.Do(func() { bin, err = build() })
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Cleanup removes the binary built by Ledgerd, if any.
func Cleanup() {
	if bin != "" {
		os.RemoveAll(filepath.Dir(bin))
	}
}

// moduleRoot returns the directory of the module that contains the
// working directory.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD: the working directory is not inside a module")
	}
	return filepath.Dir(gomod), nil
}

func build() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "ledgerd-test-bin-")
	if err != nil {
		return "", fmt.Errorf("build ledgerd: %w", err)
	}
	path := filepath.Join(dir, "ledgerd")
	cmd := exec.Command("go", "build", "-tags", "hashicorpmetrics", "-o", path, "./cmd/ledgerd")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build ./cmd/ledgerd: %w\n%s", err, out)
	}
	return path, nil
}

// ErrUnavailable means AtRevision could not even try to build: no go or
// git command, the module is not in a git repository, or the revision is
// not in its history (a shallow clone, an exported tarball). Tests that
// need the old binary skip on it, loudly; a build that was attempted and
// failed is a different error.
var ErrUnavailable = errors.New("testbin: cannot build from git history")

// AtRevision builds ./cmd/ledgerd (with -tags hashicorpmetrics) as of the
// git revision rev of the repository that holds this module: it resolves
// rev with git rev-parse, extracts that tree with git archive into a new
// directory under dir (the repository and its work trees are only read),
// and builds there. It returns the binary's path and the full commit.
func AtRevision(rev, dir string) (bin, commit string, err error) {
	for _, tool := range []string{"go", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", "", fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	root, err := moduleRoot()
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	out, err := exec.Command("git", "-C", root, "rev-parse", "--verify", "--quiet", rev+"^{commit}").Output()
	if err != nil {
		return "", "", fmt.Errorf("%w: git rev-parse %s in %s: %w", ErrUnavailable, rev, root, err)
	}
	commit = strings.TrimSpace(string(out))
	src, err := os.MkdirTemp(dir, "ledgerd-"+commit[:min(12, len(commit))]+"-")
	if err != nil {
		return "", "", fmt.Errorf("testbin: build %s: %w", rev, err)
	}
	// git archive | tar -x, without a shell.
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", "", fmt.Errorf("testbin: git archive %s: %w", commit, err)
	}
	untar.Stdin = pipe
	var archiveErr, untarErr strings.Builder
	archive.Stderr, untar.Stderr = &archiveErr, &untarErr
	if err := untar.Start(); err != nil {
		return "", "", fmt.Errorf("testbin: tar: %w", err)
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		return "", "", fmt.Errorf("testbin: git archive %s: %w: %s", commit, err, archiveErr.String())
	}
	if err := untar.Wait(); err != nil {
		return "", "", fmt.Errorf("testbin: extract %s: %w: %s", commit, err, untarErr.String())
	}
	bin = filepath.Join(src, "ledgerd")
	cmd := exec.Command("go", "build", "-tags", "hashicorpmetrics", "-o", bin, "./cmd/ledgerd")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off") // the old tree alone, whatever workspace is around
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("testbin: go build ./cmd/ledgerd at %s: %w\n%s", commit, err, out)
	}
	return bin, commit, nil
}
