//go:build linux

package cluster

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps size bytes of the file at path read-only, its pages
// populated at once (they are usually in the page cache already).
func mapFile(path string, size int64) ([]byte, func() error, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil, fmt.Errorf("cluster: map %s: size %d", path, size)
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: map snapshot: %w", err)
	}
	// The mapping keeps the file; the descriptor is not needed after.
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: map snapshot: %w", err)
	}
	if st.Size() != size {
		// Mapping past the end of the file would fault on access.
		return nil, nil, fmt.Errorf("cluster: map %s: file has %d bytes, the snapshot's metadata says %d", path, st.Size(), size)
	}
	data, err := syscall.Mmap(int(fh.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_POPULATE)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: map snapshot: %w", err)
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
