// Package atomicfile replaces a file so that a crash at any point leaves
// either its old content or the whole new one, never a part of either. It
// is for the small files a node or an operator reads back after a crash
// (node IDs, keyrings, snapshot backups); it must not be used for data
// that has its own log.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write replaces file with what write produces: a temporary file beside
// it (mode 0600), synced, renamed over it, then the directory synced. When
// write or any step fails, file is as it was and the temporary file is
// gone.
func Write(file string, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(file)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriter(tmp)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("%s written, but not durably: %w", file, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("%s written, but not durably: %w", file, err)
	}
	return nil
}

// WriteBytes is Write of data.
func WriteBytes(file string, data []byte) error {
	return Write(file, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
