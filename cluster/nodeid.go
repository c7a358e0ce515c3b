package cluster

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ledgerd/ledgerd/internal/atomicfile"
)

// nodeIDFile is the file, beside the Raft data, that holds the server ID.
const nodeIDFile = "node-id"

// loadOrCreateNodeID returns the server ID persisted in dir, creating a new
// random one on first start. Because the ID lives with the data, a node
// whose data directory was wiped comes back as a new server and can never
// claim votes or log entries it no longer has.
func loadOrCreateNodeID(dir string) (string, error) {
	path := filepath.Join(dir, nodeIDFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(b))
		if !validNodeID(id) {
			return "", fmt.Errorf("cluster: %s holds an invalid node id %q", path, id)
		}
		return id, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("cluster: read node id: %w", err)
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("cluster: generate node id: %w", err)
	}
	raw[6] = raw[6]&0x0f | 0x40 // UUID version 4
	raw[8] = raw[8]&0x3f | 0x80
	id := fmt.Sprintf("%x-%x-%x-%x-%x", raw[0:4], raw[4:6], raw[6:8], raw[8:10], raw[10:16])
	if err := atomicfile.WriteBytes(path, []byte(id+"\n")); err != nil {
		return "", fmt.Errorf("cluster: write node id: %w", err)
	}
	return id, nil
}

func validNodeID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}
