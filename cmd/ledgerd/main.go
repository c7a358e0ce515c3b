// Command ledgerd is the single ledgerd binary: the server (`ledgerd agent`)
// and the client subcommands, dispatched HashiCorp-style by name.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"
)

// version is overridden at link time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// command is one registered subcommand.
type command struct {
	name     string
	synopsis string
	run      func(args []string) int
}

// commands is the registry filled by register, usually from init functions
// in the file that implements the command.
var commands = map[string]command{}

// register adds a subcommand to the dispatcher. It panics on a duplicate
// name because that is a programming error caught by every test run.
func register(name, synopsis string, run func(args []string) int) {
	if _, dup := commands[name]; dup {
		panic("ledgerd: command registered twice: " + name)
	}
	commands[name] = command{name: name, synopsis: synopsis, run: run}
}

func init() {
	register("version", "Print the ledgerd version", runVersion)
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs the subcommand named by args[0] and returns the exit code.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2 // usage, like every subcommand's usage errors
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return 0
	case "-v", "-version", "--version":
		return runVersion(nil)
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "ledgerd: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return cmd.run(args[1:])
}

// usage lists every registered command with its synopsis, sorted by name.
func usage(w io.Writer) {
	names := make([]string, 0, len(commands))
	width := 0
	for name := range commands {
		names = append(names, name)
		width = max(width, len(name))
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("Usage: ledgerd <command> [args]\n\nAvailable commands are:\n")
	for _, name := range names {
		fmt.Fprintf(&b, "    %-*s    %s\n", width, name, commands[name].synopsis)
	}
	b.WriteString("\nRun `ledgerd <command> -help` for the flags of one command.\n")
	io.WriteString(w, b.String())
}

func runVersion(_ []string) int {
	rev := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " (" + s.Value[:12] + ")"
			}
		}
	}
	fmt.Printf("ledgerd v%s%s\n", version, rev)
	return 0
}
