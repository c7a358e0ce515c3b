package agent

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/ledgerd/ledgerd/fsm"
	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// mustAgent assembles an agent from a parsed configuration, logging
// nowhere; the caller runs it.
func mustAgent(t testing.TB, cfg Config, flags Flags) *Agent {
	t.Helper()
	a, err := New(cfg, Options{Dev: flags.Dev, Logger: cfg.NewLogger(io.Discard)})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// applyDev replicates a raw fsm command through the agent's node and
// returns its result, failing on anything but STATUS_OK: tests use it to
// write what the public API cannot express.
func (a *Agent) applyDev(ctx context.Context, cmd *fsmv1.Command) (*fsmv1.Result, error) {
	b, err := fsm.Encode(cmd)
	if err != nil {
		return nil, err
	}
	out, err := a.Node().Apply(ctx, b)
	if err != nil {
		return nil, err
	}
	res, err := fsm.DecodeResult(out)
	if err != nil {
		return nil, err
	}
	if res.GetStatus() != fsmv1.Result_STATUS_OK {
		return nil, fmt.Errorf("%s: %s: %s", cmd.GetType(), res.GetStatus(), res.GetMessage())
	}
	return res, nil
}

func createResource(name string, capacity int64) *fsmv1.Command {
	return &fsmv1.Command{Type: fsmv1.Command_TYPE_CREATE_RESOURCE, IdempotencyKey: "create-" + name, Owner: "default",
		Payload: &fsmv1.Command_CreateResource{CreateResource: &fsmv1.CreateResource{Name: name, Capacity: capacity, Unit: "cores"}}}
}
