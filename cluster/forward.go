package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
)

// Forwarding: a follower sends the commands of Apply and ApplyBatch to the
// leader's pathApplyBatch in one request, in the batch wire format below.
// The leader answers each command with what applyLocalBatch returned.
const (
	// pathApplyBatch is the one endpoint followers forward writes to.
	pathApplyBatch = "/internal/applybatch"
	// pathApply takes one raw command and answers with the raw result or
	// an error class header.
	//
	// Deprecated: servers of the previous release (0.1.0) forward single
	// writes here, so this release (0.2.0) keeps serving it, through the
	// batch code path, for rolling upgrades from 0.1.0. Nothing in this
	// release sends to it. It goes away in release 0.3.0.
	pathApply = "/internal/apply"
)

// maxBatchCommands bounds the commands of one forwarded batch.
const maxBatchCommands = 4096

// maxCommandSize bounds a forwarded command.
const maxCommandSize = 8 << 20

// Batch wire format. Request: uvarint count, then per command uvarint
// length and bytes. Response (200): per command one class byte (0 for
// success, else an index into wireClasses), uvarint length and the result
// or the error message. The list only grows: a follower that meets an
// index it does not know fails the whole batch as outcome unknown, so a
// new class may only be sent once no server of an older release remains.
var wireClasses = []string{"", errClassFSM, errClassNotLeader, errClassNoLeader, errClassShutdown, errClassUnknown, errClassOther}

func appendChunk(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

func readChunk(r *bytes.Reader, limit int) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > uint64(limit) || n > uint64(r.Len()) {
		return nil, fmt.Errorf("chunk of %d bytes exceeds what is left (%d)", n, r.Len())
	}
	p := make([]byte, n)
	_, err = io.ReadFull(r, p)
	return p, err
}

func encodeCommands(cmds [][]byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(cmds)))
	for _, c := range cmds {
		b = appendChunk(b, c)
	}
	return b
}

func decodeCommands(body []byte) ([][]byte, error) {
	r := bytes.NewReader(body)
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, fmt.Errorf("command count: %w", err)
	}
	if n > maxBatchCommands {
		return nil, fmt.Errorf("%d commands, at most %d per batch", n, maxBatchCommands)
	}
	cmds := make([][]byte, n)
	for i := range cmds {
		if cmds[i], err = readChunk(r, maxCommandSize); err != nil {
			return nil, fmt.Errorf("command %d: %w", i, err)
		}
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%d trailing bytes after %d commands", r.Len(), n)
	}
	return cmds, nil
}

func encodeResults(res []Result) []byte {
	var b []byte
	for _, r := range res {
		if r.Err == nil {
			b = appendChunk(append(b, 0), r.Data)
			continue
		}
		class, msg := errClassOf(r.Err)
		k := 0
		for i, c := range wireClasses {
			if c == class {
				k = i
			}
		}
		b = appendChunk(append(b, byte(k)), []byte(msg))
	}
	return b
}

func decodeResults(body []byte, n int) ([]Result, error) {
	r := bytes.NewReader(body)
	out := make([]Result, n)
	for i := range out {
		k, err := r.ReadByte()
		if err != nil {
			return nil, fmt.Errorf("result %d: %w", i, err)
		}
		if int(k) >= len(wireClasses) {
			return nil, fmt.Errorf("result %d: unknown class %d", i, k)
		}
		p, err := readChunk(r, maxCommandSize)
		if err != nil {
			return nil, fmt.Errorf("result %d: %w", i, err)
		}
		if k == 0 {
			out[i].Data = p
			continue
		}
		if out[i].Err = classErr(wireClasses[k], string(p)); out[i].Err == nil {
			out[i].Err = fmt.Errorf("leader answered: %s", p)
		}
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%d trailing bytes after %d results", r.Len(), n)
	}
	return out, nil
}

// serveApplyBatch is the leader's side of forwarding.
func (n *Node) serveApplyBatch(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4*maxCommandSize))
	if err != nil {
		writeErr(w, http.StatusBadRequest, errClassOther, fmt.Errorf("read commands: %w", err))
		return
	}
	cmds, err := decodeCommands(body)
	if err != nil {
		writeErr(w, http.StatusBadRequest, errClassOther, fmt.Errorf("decode commands: %w", err))
		return
	}
	res := n.applyLocalBatch(r.Context(), cmds, true)
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(encodeResults(res))
}

// serveApply answers the deprecated single-command endpoint (see
// pathApply) from the batch code path: a batch of one, answered in the
// old format.
func (n *Node) serveApply(w http.ResponseWriter, r *http.Request) {
	cmd, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCommandSize))
	if err != nil {
		writeErr(w, http.StatusBadRequest, errClassOther, fmt.Errorf("read command: %w", err))
		return
	}
	res := n.applyLocalBatch(r.Context(), [][]byte{cmd}, true)[0]
	if res.Err != nil {
		writeClusterErr(w, res.Err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(res.Data)
}

// forward sends cmds to the leader at rpcAddr in one request: the only
// way writes travel between servers. Commands the request never
// delivered (dial failure) are ErrNotLeader, so the caller retries them;
// a request that broke after it was sent leaves every command's outcome
// unknown. The request ends early, outcome unknown with cause
// errLeaderMoved, when moved is closed: this node saw the leadership
// change while it waited (see leaderwatch.go).
func (n *Node) forward(ctx context.Context, rpcAddr string, moved <-chan struct{}, cmds [][]byte) []Result {
	all := func(err error) []Result {
		out := make([]Result, len(cmds))
		fail(out, seq(len(cmds)), err)
		return out
	}
	fctx, cancel := n.toLeader(ctx, moved)
	defer cancel()
	// unknown is the error of a request that may have been delivered.
	unknown := func(what string, err error) []Result {
		if c := context.Cause(fctx); c != nil && ctx.Err() == nil {
			err = fmt.Errorf("%w (%w)", c, err)
		}
		return all(fmt.Errorf("cluster: forward apply batch to %s: %s%w: %w", rpcAddr, what, ErrOutcomeUnknown, err))
	}
	req, err := n.newInternalRequest(fctx, http.MethodPost, n.scheme+"://"+rpcAddr+pathApplyBatch, bytes.NewReader(encodeCommands(cmds)))
	if err != nil {
		return all(fmt.Errorf("cluster: forward apply batch: %w", err))
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	n.m.forwarded.Add(float64(len(cmds)))
	resp, err := n.client.Do(req)
	if err != nil {
		if isDialErr(err) {
			return all(fmt.Errorf("cluster: forward apply batch to %s: %w: %w", rpcAddr, ErrNotLeader, err))
		}
		return unknown("", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
		// Every server of this and the previous release serves the
		// endpoint; nothing was applied, and retrying would not help.
		return all(fmt.Errorf("cluster: forward apply batch to %s: the leader does not serve %s (%s): "+
			"it runs a release older than the previous one or does not mount the internal endpoints", rpcAddr, pathApplyBatch, resp.Status))
	}
	if resp.StatusCode != http.StatusOK {
		return all(fmt.Errorf("cluster: forward apply batch to %s: %w", rpcAddr, decodeErr(resp)))
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return unknown("read results: ", err)
	}
	res, err := decodeResults(body, len(cmds))
	if err != nil {
		return all(fmt.Errorf("cluster: forward apply batch to %s: decode results: %w: %w", rpcAddr, ErrOutcomeUnknown, err))
	}
	return res
}
