package cluster

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestCommonEnvelope(t *testing.T) {
	srv := func(ids ...string) []raft.Server {
		var out []raft.Server
		for _, id := range ids {
			out = append(out, raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(id + ":1")})
		}
		return out
	}
	p := func(v uint32, st gossipStatus) peer { return peer{meta: nodeMeta{Envelope: v}, status: st} }
	for _, tc := range []struct {
		name    string
		own     uint32
		servers []raft.Server
		peers   map[string]peer
		want    uint32
	}{
		{"alone, no configuration", 3, nil, nil, 3},
		{"alone in the configuration", 3, srv("self"), nil, 3},
		{"own zero means one", 0, srv("self"), nil, 1},
		{"all the same", 3, srv("self", "a", "b"), map[string]peer{"a": p(3, statusAlive), "b": p(3, statusAlive)}, 3},
		{"the lowest wins", 3, srv("self", "a", "b"), map[string]peer{"a": p(2, statusAlive), "b": p(3, statusSuspect)}, 2},
		{"a peer ahead of us", 2, srv("self", "a"), map[string]peer{"a": p(5, statusAlive)}, 2},
		{"previous release announces nothing", 3, srv("self", "a"), map[string]peer{"a": p(0, statusAlive)}, 1},
		{"configured but never seen", 3, srv("self", "a", "b"), map[string]peer{"a": p(3, statusAlive)}, 1},
		{"configured and failed", 3, srv("self", "a"), map[string]peer{"a": p(3, statusFailed)}, 1},
		{"configured and left", 3, srv("self", "a"), map[string]peer{"a": p(3, statusLeft)}, 1},
		{"gossip member outside the configuration does not count", 3, srv("self", "a"),
			map[string]peer{"a": p(3, statusAlive), "stranger": p(1, statusAlive)}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := commonEnvelope("self", tc.own, tc.servers, tc.peers); got != tc.want {
				t.Fatalf("commonEnvelope = %d, want %d", got, tc.want)
			}
		})
	}
}

// previousReleaseMeta is nodeMeta as the previous release (0.1.0)
// declares it; its servers decode our announcements with it.
type previousReleaseMeta struct {
	ID      string `json:"id"`
	Name    string `json:"n,omitempty"`
	Raft    string `json:"r"`
	RPC     string `json:"h"`
	Expect  int    `json:"e,omitempty"`
	Version string `json:"v,omitempty"`
	Leaving bool   `json:"l,omitempty"`
}

// TestGossipMetaWithEnvelopeFitsAndOldReleasesReadIt: a worst-case
// announcement (a long name, IPv6 addresses with zones, the largest
// version) stays within memberlist's 512 bytes, a server of the previous
// release decodes it (strict decoding would refuse an unknown key, which
// is why the check decodes with the old struct the way the old code
// does), and our decoder reads the old announcement as version 1.
func TestGossipMetaWithEnvelopeFitsAndOldReleasesReadIt(t *testing.T) {
	addr := "[fe80:ffff:ffff:ffff:ffff:ffff:ffff:ffff%eth0]:65535"
	m := nodeMeta{ID: strings.Repeat("a", 36), Name: strings.Repeat("n", 64), Raft: addr, RPC: addr,
		Expect: 999, Version: Version, Leaving: true, Envelope: ^uint32(0)}
	b, err := m.encode()
	if err != nil {
		t.Fatalf("worst-case meta: %v", err)
	}
	t.Logf("worst-case gossip meta: %d of %d bytes", len(b), maxMetaSize)
	var old previousReleaseMeta
	if err := json.Unmarshal(b, &old); err != nil {
		t.Fatalf("previous release cannot decode the meta: %v", err)
	}
	if old.ID != m.ID || old.Raft != m.Raft || old.RPC != m.RPC || old.Expect != m.Expect || !old.Leaving {
		t.Fatalf("previous release read %+v from %s", old, b)
	}
	ob, err := json.Marshal(previousReleaseMeta{ID: "x", Raft: "10.0.0.1:1", RPC: "10.0.0.1:2", Version: "0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeMeta(ob)
	if err != nil || got.Envelope != 0 {
		t.Fatalf("old meta decoded as %+v, %v; want envelope 0 (counted as 1)", got, err)
	}
}

// TestCommonEnvelopeVersionAcrossACluster: three servers that can apply
// versions 3, 2 and 3 agree on 2; once one of them crashes, every
// survivor says 1 until it is back (it could come back on an older
// release).
func TestCommonEnvelopeVersionAcrossACluster(t *testing.T) {
	versions := map[string]uint32{"n0": 3, "n1": 2, "n2": 3}
	c := newCluster(t, 3, func(cfg *Config) { cfg.EnvelopeVersion = versions[cfg.NodeName] })
	c.waitVoters(3)
	all := func(want uint32) func() bool {
		return func() bool {
			for _, tn := range c.running() {
				if tn.node.CommonEnvelopeVersion() != want {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, 20*time.Second, "every server to report common envelope version 2", all(2))
	c.crash(c.nodes[2])
	waitFor(t, 20*time.Second, "the survivors to report 1 while n2 is down", all(1))
	c.restart(c.nodes[2])
	waitFor(t, 20*time.Second, "every server to report 2 again", all(2))
}
