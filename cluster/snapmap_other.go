//go:build !linux

package cluster

// mapFile does not map on this platform: the snapshot is read.
func mapFile(string, int64) ([]byte, func() error, error) { return nil, nil, errNoMapping }
