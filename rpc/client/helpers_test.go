package client

import (
	"testing"

	"github.com/ledgerd/ledgerd/rpc"
	"github.com/ledgerd/ledgerd/rpc/rpctest"
)

func rpctestAPI(t *testing.T) rpc.Options {
	return rpc.Options{Auth: rpctest.NewAuth(t)}
}
