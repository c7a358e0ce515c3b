package client

import (
	"testing"

	"github.com/ledgerd/ledgerd/agent/agenttest"
	"github.com/ledgerd/ledgerd/rpc"
)

func rpctestAPI(t *testing.T) rpc.Options {
	return rpc.Options{Auth: agenttest.NewAuth(t)}
}
