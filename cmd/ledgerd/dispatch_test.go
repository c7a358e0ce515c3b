package main

import (
	"io"
	"strings"
	"testing"
)

func TestDispatchListsCommands(t *testing.T) {
	var out strings.Builder
	if code := dispatch([]string{"--help"}, &out, io.Discard); code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, name := range []string{"agent", "version"} {
		if !strings.Contains(out.String(), name) {
			t.Errorf("help lacks %q:\n%s", name, out.String())
		}
	}
	if code := dispatch([]string{"no-such"}, io.Discard, io.Discard); code == 0 {
		t.Error("unknown command exited 0")
	}
	if code := dispatch(nil, io.Discard, io.Discard); code == 0 {
		t.Error("no command exited 0")
	}
}
