package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ledgerd/ledgerd/agent"
)

func init() {
	register("agent", "Run a ledgerd server (use -dev for a one-node playground)", runAgent)
}

// runAgent is `ledgerd agent`: parse the configuration, assemble the node
// (package agent) and run it until SIGINT or SIGTERM; SIGHUP reloads the
// TLS certificate and the tokens file.
func runAgent(args []string) int {
	cfg, flags, err := agent.ParseArgs(args, os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ledgerd agent:", err)
		return 2
	}
	if flags.ConfigCheck {
		fmt.Println("configuration OK")
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := agent.New(cfg, agent.Options{Dev: flags.Dev})
	if err == nil {
		// SIGHUP reloads the certificate and the tokens file; a failed
		// reload is logged and keeps the old ones.
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		go func() {
			for {
				select {
				case <-hup:
					_ = a.Reload()
				case <-ctx.Done():
					return
				}
			}
		}()
		err = a.Run(ctx, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ledgerd agent:", err)
		return 1
	}
	return 0
}
