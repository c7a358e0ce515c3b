package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// Internal endpoints, served by Handler under /internal/ (the write
// endpoints are in forward.go).
const (
	pathReadIndex = "/internal/readindex"
	pathStatus    = "/internal/status"
	pathLogCheck  = "/internal/logcheck"
)

// errHeader carries the error class of a failed internal call.
const errHeader = "Ledgerd-Error"

// tokenHeader carries the cluster's internal token (see internalToken).
const tokenHeader = "Ledgerd-Internal-Token"

// Error classes on the wire.
const (
	errClassNotLeader = "not-leader"
	errClassNoLeader  = "no-leader"
	errClassShutdown  = "shutdown"
	errClassUnknown   = "outcome-unknown"
	errClassFSM       = "fsm"
	errClassOther     = "other"
)

// status is what /internal/status reports; bootstrap and autopilot use it.
type status struct {
	ID string `json:"id"`
	// RaftAddr is the address this server's Raft transport advertises;
	// the leader compares it with the member's gossip meta before adding
	// the member to Raft. Servers of the previous release do not send it.
	RaftAddr    string `json:"raft_addr,omitempty"`
	HasState    bool   `json:"has_state"`
	LeaderID    string `json:"leader_id,omitempty"`
	State       string `json:"state"`
	Term        uint64 `json:"term"`
	LastIndex   uint64 `json:"last_index"`
	LastTerm    uint64 `json:"last_term"`
	CommitIndex uint64 `json:"commit_index"`
	Applied     uint64 `json:"applied"`
	// LastContactNanos is the time since the last contact with the leader;
	// -1 when never.
	LastContactNanos int64 `json:"last_contact_ns"`
}

// Handler serves the internal endpoints peers call on each other
// (forwarded writes, read index, status; the single-command
// /internal/apply only until 0.3.0, see pathApply). Mount it under
// /internal/ on the HTTP server at Config.RPCAdvertise. It never forwards:
// a request that reaches a non-leader is answered with a not-leader error.
//
// When gossip is encrypted, every request must carry a token derived from
// a key of the gossip keyring (servers share the keys, clients of the
// public API do not; see keyring.go), so
// the endpoints, which take raw commands, cannot be used to bypass the
// public API's authentication. Without a gossip key they are open: run
// that way only on a trusted network or in dev mode. So they are in
// MigrationAccept, where the servers not yet restarted have no key.
func (n *Node) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+pathApply, n.serveApply)
	mux.HandleFunc("POST "+pathApplyBatch, n.serveApplyBatch)
	mux.HandleFunc("GET "+pathReadIndex, n.serveReadIndex)
	mux.HandleFunc("GET "+pathStatus, n.serveStatus)
	mux.HandleFunc("GET "+pathLogCheck, n.serveLogCheck)
	mux.HandleFunc("POST "+pathKeyring, n.serveKeyring)
	if n.keys == nil || n.cfg.Migration == MigrationAccept {
		return mux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !n.tokenOK(r.Header.Get(tokenHeader)) {
			writeErr(w, http.StatusForbidden, errClassOther, errors.New("cluster: internal endpoint: missing or wrong cluster token"))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// newInternalRequest builds a request to a peer's internal endpoint.
func (n *Node) newInternalRequest(ctx context.Context, method, url string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	if tok := n.sendToken(); tok != "" {
		req.Header.Set(tokenHeader, tok)
	}
	return req, nil
}

func (n *Node) serveReadIndex(w http.ResponseWriter, r *http.Request) {
	if n.raft.State() != raft.Leader {
		writeErr(w, http.StatusConflict, errClassNotLeader, ErrNotLeader)
		return
	}
	index, err := n.readIndex(r.Context())
	if err != nil {
		writeClusterErr(w, err)
		return
	}
	_, _ = io.WriteString(w, strconv.FormatUint(index, 10))
}

func (n *Node) serveStatus(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(n.localStatus())
}

func (n *Node) localStatus() status {
	st := n.raft.Stats()
	u := func(k string) uint64 { v, _ := strconv.ParseUint(st[k], 10, 64); return v }
	lc := int64(-1)
	if d, err := time.ParseDuration(st["last_contact"]); err == nil {
		lc = int64(d)
	} else if st["last_contact"] == "0" {
		lc = 0
	}
	if n.raft.State() == raft.Leader {
		lc = 0
	}
	leader, _ := n.Leader()
	hasState := n.hadState || u("last_log_index") > 0 || leader != ""
	return status{
		ID: n.id, RaftAddr: n.RaftAddr(), HasState: hasState, LeaderID: leader, State: n.raft.State().String(),
		Term: u("term"), LastIndex: u("last_log_index"), LastTerm: u("last_log_term"),
		CommitIndex: n.raft.CommitIndex(), Applied: n.fsm.Applied(), LastContactNanos: lc,
	}
}

func writeErr(w http.ResponseWriter, code int, class string, err error) {
	w.Header().Set(errHeader, class)
	http.Error(w, err.Error(), code)
}

// errClassOf is the wire class of an apply error and the message sent
// with it (writeClusterErr and the batch results).
func errClassOf(err error) (string, string) {
	var ae *ApplyError
	switch {
	case errors.As(err, &ae):
		return errClassFSM, ae.Msg
	case errors.Is(err, ErrNotLeader):
		return errClassNotLeader, err.Error()
	case errors.Is(err, ErrNoLeader):
		return errClassNoLeader, err.Error()
	case errors.Is(err, ErrShutdown):
		return errClassShutdown, err.Error()
	case errors.Is(err, ErrOutcomeUnknown):
		return errClassUnknown, err.Error()
	}
	return errClassOther, err.Error()
}

// classStatus is the HTTP status of each error class.
var classStatus = map[string]int{
	errClassFSM:       http.StatusUnprocessableEntity,
	errClassNotLeader: http.StatusConflict,
	errClassNoLeader:  http.StatusServiceUnavailable,
	errClassShutdown:  http.StatusServiceUnavailable,
	errClassUnknown:   http.StatusGatewayTimeout,
	errClassOther:     http.StatusInternalServerError,
}

func writeClusterErr(w http.ResponseWriter, err error) {
	class, msg := errClassOf(err)
	code := classStatus[class]
	var refused *refusedError
	if errors.As(err, &refused) {
		code = http.StatusBadRequest // same class, but the sender's fault
	}
	writeErr(w, code, class, errors.New(msg))
}

// decodeErr maps an internal error response back to the sentinels.
func decodeErr(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	msg := string(bytes.TrimSpace(body))
	if err := classErr(resp.Header.Get(errHeader), msg); err != nil {
		return err
	}
	return fmt.Errorf("leader answered %s: %s", resp.Status, msg)
}

// classErr maps an error class on the wire and its message back to the
// sentinels; nil for errClassOther and unknown classes.
func classErr(class, msg string) error {
	switch class {
	case errClassFSM:
		return &ApplyError{Msg: msg}
	case errClassNotLeader:
		return fmt.Errorf("leader answered: %s: %w", msg, ErrNotLeader)
	case errClassNoLeader:
		return fmt.Errorf("leader answered: %s: %w", msg, ErrNoLeader)
	case errClassShutdown:
		// The peer is going away; for a forwarded write it was refused
		// before reaching raft, so treat it like a leader change.
		return fmt.Errorf("leader answered: %s: %w", msg, ErrNotLeader)
	case errClassUnknown:
		return fmt.Errorf("leader answered: %s: %w", msg, ErrOutcomeUnknown)
	}
	return nil
}

// isDialErr reports whether err happened before the request was sent, so a
// retry cannot duplicate it.
func isDialErr(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// fetchReadIndex asks the leader at rpcAddr for its read index; the call
// ends early (ErrNotLeader, cause errLeaderMoved) when moved is closed.
func (n *Node) fetchReadIndex(ctx context.Context, rpcAddr string, moved <-chan struct{}) (uint64, error) {
	outer := ctx
	ctx, cancel := n.toLeader(ctx, moved)
	defer cancel()
	req, err := n.newInternalRequest(ctx, http.MethodGet, n.scheme+"://"+rpcAddr+pathReadIndex, nil)
	if err != nil {
		return 0, fmt.Errorf("cluster: read index: %w", err)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		if c := context.Cause(ctx); c != nil && outer.Err() == nil {
			err = fmt.Errorf("%w (%w)", c, err)
		}
		// A read is safe to retry whatever happened.
		return 0, fmt.Errorf("cluster: read index from %s: %w: %w", rpcAddr, ErrNotLeader, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("cluster: read index from %s: %w", rpcAddr, decodeErr(resp))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32))
	if err != nil {
		return 0, fmt.Errorf("cluster: read index from %s: %w: %w", rpcAddr, ErrNotLeader, err)
	}
	index, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cluster: read index from %s: bad answer %q: %w", rpcAddr, b, err)
	}
	return index, nil
}

// fetchStatus asks the node at rpcAddr for its status.
func (n *Node) fetchStatus(ctx context.Context, rpcAddr string) (status, error) {
	st, err := n.fetchStatusOnce(ctx, rpcAddr)
	if n.ctx.Err() == nil {
		n.contacts.record(rpcAddr, err, time.Now())
	}
	return st, err
}

func (n *Node) fetchStatusOnce(ctx context.Context, rpcAddr string) (status, error) {
	var st status
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := n.getInternal(ctx, rpcAddr, pathStatus, 64<<10, &st); err != nil {
		return st, fmt.Errorf("cluster: status of %s: %w", rpcAddr, err)
	}
	return st, nil
}

// getInternal GETs a peer's internal endpoint (path with its query) and
// decodes its JSON answer, at most limit bytes, into out.
func (n *Node) getInternal(ctx context.Context, rpcAddr, path string, limit int64, out any) error {
	req, err := n.newInternalRequest(ctx, http.MethodGet, n.scheme+"://"+rpcAddr+path, nil)
	if err != nil {
		return err
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, limit)).Decode(out)
}

// peerTransport is the HTTP transport for calls to peers' internal
// endpoints; conf, when set, turns on TLS (HTTP/2 via ALPN).
func peerTransport(conf *tls.Config) *http.Transport {
	t := &http.Transport{
		Proxy:               nil, // peers are dialled directly, never through a proxy
		MaxIdleConnsPerHost: 64,  // forwarded writes are concurrent; keep connections warm
		IdleConnTimeout:     90 * time.Second,
	}
	if conf != nil {
		t.TLSClientConfig = conf.Clone()
		t.ForceAttemptHTTP2 = true
	}
	return t
}

// peerScheme is the URL scheme of peers' HTTP APIs.
func peerScheme(conf *tls.Config) string {
	if conf != nil {
		return "https"
	}
	return "http"
}
