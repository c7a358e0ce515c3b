package cluster

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/memberlist"

	"github.com/ledgerd/ledgerd/internal/atomicfile"
)

// Gossip-key rotation. Every server keeps memberlist's keyring (the keys
// it decrypts gossip with; the primary one encrypts) and, once an
// operator has changed it, persists it as keyringFile in its data dir;
// a server that finds that file at start uses it instead of
// Config.GossipKey. The operations run cluster-wide: the leader applies
// one to its own keyring, then to every other server of the Raft
// configuration through their /internal/keyring endpoint.
//
// Rotation is install NEW (every server decrypts with both keys), use
// NEW (every server encrypts with it), remove OLD (nobody accepts it any
// more). The internal token follows the keyring: a server sends the one
// derived from its primary key and accepts the one of any installed key,
// so forwarding keeps working at every step.

// keyringFile is the persisted keyring in the data dir.
const keyringFile = "keyring.json"

// pathKeyring is the internal endpoint of keyring operations.
const pathKeyring = "/internal/keyring"

// KeyringOp is a gossip keyring operation.
type KeyringOp string

// The keyring operations.
const (
	// KeyringList reports every server's keys.
	KeyringList KeyringOp = "list"
	// KeyringInstall adds a key every server decrypts with.
	KeyringInstall KeyringOp = "install"
	// KeyringUse makes an installed key the one every server encrypts with.
	KeyringUse KeyringOp = "use"
	// KeyringRemove removes a key that is no server's primary key.
	KeyringRemove KeyringOp = "remove"
)

// KeyringMember is one server's keyring after an operation, or the error
// that server met.
type KeyringMember struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Keys are the installed keys, base64, the primary key first.
	Keys []string `json:"keys,omitempty"`
	// Err is why the operation failed on this server; empty on success.
	Err string `json:"error,omitempty"`
}

// ErrNoKeyring means gossip runs without encryption, so there is no
// keyring to change (set Config.GossipKey).
var ErrNoKeyring = errors.New("cluster: gossip is not encrypted: no keyring (set a gossip key first)")

// keyringRequest is the body of POST /internal/keyring.
type keyringRequest struct {
	Op  KeyringOp `json:"op"`
	Key string    `json:"key,omitempty"` // base64
	// Cluster asks the leader to run the operation on every server;
	// otherwise the receiver runs it on its own keyring only.
	Cluster bool `json:"cluster,omitempty"`
}

// keyring is a node's memberlist keyring with its persistence.
type keyring struct {
	kr  *memberlist.Keyring
	dir string
	mu  sync.Mutex // orders operations and their writes to disk
}

// newKeyring loads keyringFile from dir when it exists, else starts from
// key; nil when neither gives a key (gossip unencrypted).
func newKeyring(dir string, key []byte) (*keyring, bool, error) {
	keys, err := loadKeyringFile(dir)
	if err != nil {
		return nil, false, err
	}
	fromFile := len(keys) > 0
	if !fromFile {
		if len(key) == 0 {
			return nil, false, nil
		}
		keys = [][]byte{key}
	}
	kr, err := memberlist.NewKeyring(keys[1:], keys[0])
	if err != nil {
		return nil, false, fmt.Errorf("cluster: gossip keyring: %w", err)
	}
	return &keyring{kr: kr, dir: dir}, fromFile, nil
}

func loadKeyringFile(dir string) ([][]byte, error) {
	path := filepath.Join(dir, keyringFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: read %s: %w", path, err)
	}
	var enc []string
	if err := json.Unmarshal(b, &enc); err != nil {
		return nil, fmt.Errorf("cluster: %s: want a JSON array of base64 keys, primary first: %w", path, err)
	}
	if len(enc) == 0 {
		return nil, fmt.Errorf("cluster: %s: no keys", path)
	}
	keys := make([][]byte, len(enc))
	for i, e := range enc {
		if keys[i], err = decodeGossipKey(e); err != nil {
			return nil, fmt.Errorf("cluster: %s: key %d: %w", path, i, err)
		}
	}
	return keys, nil
}

// decodeGossipKey parses a base64 gossip key of 16, 24 or 32 bytes.
func decodeGossipKey(s string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not base64: %w", err)
	}
	if n := len(k); n != 16 && n != 24 && n != 32 {
		return nil, fmt.Errorf("must decode to 16, 24 or 32 bytes, got %d", n)
	}
	return k, nil
}

// encodedKeys returns the keys, base64, primary first.
func (k *keyring) encodedKeys() []string {
	keys := k.kr.GetKeys() // primary first
	out := make([]string, len(keys))
	for i, key := range keys {
		out[i] = base64.StdEncoding.EncodeToString(key)
	}
	return out
}

// save writes the keyring to keyringFile (mode 0600) atomically.
func (k *keyring) save() error {
	b, err := json.MarshalIndent(k.encodedKeys(), "", "  ")
	if err != nil {
		return fmt.Errorf("cluster: encode keyring: %w", err)
	}
	if err := atomicfile.WriteBytes(filepath.Join(k.dir, keyringFile), append(b, '\n')); err != nil {
		return fmt.Errorf("cluster: save keyring: %w", err)
	}
	return nil
}

// apply runs op on this keyring and persists the result.
func (k *keyring) apply(op KeyringOp, key []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	var err error
	switch op {
	case KeyringList:
		return nil
	case KeyringInstall:
		err = k.kr.AddKey(key)
	case KeyringUse:
		err = k.kr.UseKey(key)
	case KeyringRemove:
		err = k.kr.RemoveKey(key) // refuses the primary key; absent is no-op
	default:
		return fmt.Errorf("cluster: keyring: unknown operation %q", op)
	}
	if err != nil {
		return fmt.Errorf("cluster: keyring %s: %w", op, err)
	}
	return k.save()
}

// tokenFor derives the internal-endpoint token from a gossip key.
func tokenFor(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("ledgerd internal endpoints v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// internalToken derives the token peers present on internal requests from
// the gossip key; empty when there is no key.
func internalToken(key []byte) string {
	if len(key) == 0 {
		return ""
	}
	return tokenFor(key)
}

// sendToken is the token this node presents: the one of its primary key.
func (n *Node) sendToken() string {
	if n.keys == nil {
		return ""
	}
	return internalToken(n.keys.kr.GetPrimaryKey())
}

// tokenOK reports whether got is the token of an installed key.
func (n *Node) tokenOK(got string) bool {
	ok := false
	for _, k := range n.keys.kr.GetKeys() {
		ok = subtle.ConstantTimeCompare([]byte(got), []byte(tokenFor(k))) == 1 || ok
	}
	return ok
}

// GossipKeyring runs a keyring operation on every server of the cluster
// and returns each server's keyring afterwards (KeyringList only reports
// them). key is base64 (16, 24 or 32 bytes), unused for KeyringList. Any
// node may be asked; a follower hands the operation to the leader, which
// applies it to its own keyring and then to every other server of the
// Raft configuration. Before KeyringUse the leader checks that every
// server has the key installed, and before KeyringRemove that it is no
// server's primary key, so those two change nothing unless every server
// answers. The error lists the servers that failed; the members returned
// say what each server has. Operations are idempotent: run it again once
// the failed servers are back.
func (n *Node) GossipKeyring(ctx context.Context, op KeyringOp, key string) ([]KeyringMember, error) {
	if n.closed.Load() {
		return nil, fmt.Errorf("cluster: gossip keyring: %w", ErrShutdown)
	}
	if n.keys == nil {
		return nil, ErrNoKeyring
	}
	raw, err := checkKeyringArgs(op, key)
	if err != nil {
		return nil, err
	}
	ctx, cancel := n.bound(ctx)
	defer cancel()
	if !n.IsLeader() {
		id, rpc := n.Leader()
		if id == "" || rpc == "" {
			return nil, fmt.Errorf("cluster: gossip keyring: %w", ErrNoLeader)
		}
		return n.keyringCall(ctx, rpc, keyringRequest{Op: op, Key: key, Cluster: true})
	}
	return n.keyringFanOut(ctx, op, key, raw)
}

func checkKeyringArgs(op KeyringOp, key string) ([]byte, error) {
	switch op {
	case KeyringList:
		return nil, nil
	case KeyringInstall, KeyringUse, KeyringRemove:
	default:
		return nil, fmt.Errorf("cluster: gossip keyring: unknown operation %q (list, install, use or remove)", op)
	}
	raw, err := decodeGossipKey(key)
	if err != nil {
		return nil, fmt.Errorf("cluster: gossip keyring %s: key: %w", op, err)
	}
	return raw, nil
}

// keyringFanOut is the leader's side of GossipKeyring.
func (n *Node) keyringFanOut(ctx context.Context, op KeyringOp, key string, raw []byte) ([]KeyringMember, error) {
	if op == KeyringUse || op == KeyringRemove {
		now, err := n.keyringEverywhere(ctx, KeyringList, "", nil)
		if err != nil {
			return now, fmt.Errorf("cluster: gossip keyring %s: not every server answered, nothing changed: %w", op, err)
		}
		var bad []string
		for _, m := range now {
			switch {
			case op == KeyringUse && !slicesContains(m.Keys, key):
				bad = append(bad, m.ID+" (key not installed)")
			case op == KeyringRemove && len(m.Keys) > 0 && m.Keys[0] == key:
				bad = append(bad, m.ID+" (it is the primary key)")
			}
		}
		if len(bad) > 0 {
			return now, fmt.Errorf("cluster: gossip keyring %s: refused, nothing changed: %s", op, strings.Join(bad, ", "))
		}
	}
	out, err := n.keyringEverywhere(ctx, op, key, raw)
	if err != nil {
		return out, fmt.Errorf("cluster: gossip keyring %s: %w", op, err)
	}
	n.log.Info("gossip keyring changed on every server", "op", op, "servers", len(out))
	return out, nil
}

// keyringEverywhere applies op here, then on every other server of the
// Raft configuration, and reports each one sorted by ID; the error names
// the servers that failed.
func (n *Node) keyringEverywhere(ctx context.Context, op KeyringOp, key string, raw []byte) ([]KeyringMember, error) {
	self := KeyringMember{ID: n.id, Name: n.cfg.NodeName}
	if err := n.keys.apply(op, raw); err != nil {
		self.Err = err.Error()
	}
	self.Keys = n.keys.encodedKeys()
	out := []KeyringMember{self}
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return out, fmt.Errorf("configuration: %w", mapRaftErr(err))
	}
	peers := n.gossip.snapshot()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range fut.Configuration().Servers {
		id := string(s.ID)
		if id == n.id {
			continue
		}
		p, ok := peers[id]
		if !ok || p.meta.RPC == "" {
			out = append(out, KeyringMember{ID: id, Err: "not known to gossip: no address to reach it at"})
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := KeyringMember{ID: id, Name: p.meta.Name}
			res, err := n.keyringCall(ctx, p.meta.RPC, keyringRequest{Op: op, Key: key})
			switch {
			case len(res) == 1 && res[0].ID == id:
				m = res[0]
				if m.Err == "" && err != nil {
					m.Err = err.Error()
				}
			case err != nil:
				m.Err = err.Error()
			default:
				m.Err = fmt.Sprintf("answered %d keyrings for %v, want its own", len(res), res)
			}
			mu.Lock()
			out = append(out, m)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	var failed []string
	for _, m := range out {
		if m.Err != "" {
			failed = append(failed, m.ID+": "+m.Err)
		}
	}
	if len(failed) > 0 {
		return out, fmt.Errorf("%d of %d servers failed: %s", len(failed), len(out), strings.Join(failed, "; "))
	}
	return out, nil
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// keyringCall sends a keyring request to the server at rpcAddr.
func (n *Node) keyringCall(ctx context.Context, rpcAddr string, kr keyringRequest) ([]KeyringMember, error) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.ForwardTimeout)
	defer cancel()
	body, err := json.Marshal(kr)
	if err != nil {
		return nil, fmt.Errorf("cluster: keyring request: %w", err)
	}
	req, err := n.newInternalRequest(ctx, http.MethodPost, n.scheme+"://"+rpcAddr+pathKeyring, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("cluster: keyring request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cluster: keyring request to %s: %w", rpcAddr, err)
	}
	defer resp.Body.Close()
	var out struct {
		Members []KeyringMember `json:"members"`
		Error   string          `json:"error,omitempty"`
	}
	if resp.StatusCode != http.StatusOK && resp.Header.Get("Content-Type") != "application/json" {
		return nil, fmt.Errorf("cluster: keyring request to %s: %w", rpcAddr, decodeErr(resp))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
		return nil, fmt.Errorf("cluster: keyring answer from %s: %w", rpcAddr, err)
	}
	if out.Error != "" {
		return out.Members, errors.New(out.Error)
	}
	return out.Members, nil
}

// serveKeyring runs a keyring operation on this server's keyring, or, for
// a cluster-wide request on the leader, on every server.
func (n *Node) serveKeyring(w http.ResponseWriter, r *http.Request) {
	var kr keyringRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&kr); err != nil {
		writeErr(w, http.StatusBadRequest, errClassOther, fmt.Errorf("keyring request: %w", err))
		return
	}
	if n.keys == nil {
		writeErr(w, http.StatusConflict, errClassOther, ErrNoKeyring)
		return
	}
	raw, err := checkKeyringArgs(kr.Op, kr.Key)
	if err != nil {
		writeErr(w, http.StatusBadRequest, errClassOther, err)
		return
	}
	var out struct {
		Members []KeyringMember `json:"members"`
		Error   string          `json:"error,omitempty"`
	}
	switch {
	case kr.Cluster && !n.IsLeader():
		writeErr(w, http.StatusConflict, errClassNotLeader, ErrNotLeader)
		return
	case kr.Cluster:
		out.Members, err = n.keyringFanOut(r.Context(), kr.Op, kr.Key, raw)
	default:
		m := KeyringMember{ID: n.id, Name: n.cfg.NodeName}
		if err = n.keys.apply(kr.Op, raw); err != nil {
			m.Err = err.Error()
		}
		m.Keys = n.keys.encodedKeys()
		out.Members = []KeyringMember{m}
	}
	if err != nil {
		out.Error = err.Error()
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
