package peers

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/ledgerd/ledgerd/benchmarks/service"
)

const etcdPrefix = "res/"

// Etcd is a real etcd cluster of n members embedded in this process on
// loopback, driven through the etcd v3 client.
type Etcd struct {
	members []*embed.Etcd
	cli     *clientv3.Client
	dir     string
	rmDir   bool
	ids     atomic.Uint64
	// Conflicts counts compare failures that forced a retry.
	Conflicts atomic.Int64
}

// EtcdTLS names the PEM files that secure an etcd cluster the way a
// secured ledgerd is secured: Cert and Key serve both the client and the
// peer listeners and are what members and the benchmark client present
// (a certificate valid for 127.0.0.1 with server and client auth, such as
// one from `ledgerd tls cert create -server`); CA verifies them. Client
// and peer connections are then mutual TLS (etcd's --client-cert-auth and
// --peer-client-cert-auth).
type EtcdTLS struct {
	CA, Cert, Key string
}

// NewEtcd starts n members with client ports base+i and peer ports
// base+100+i under dir (a temporary directory when empty), with mutual
// TLS when sec is set and in clear text when it is nil.
func NewEtcd(n, base int, dir string, sec *EtcdTLS) (*Etcd, error) {
	if n <= 0 {
		return nil, fmt.Errorf("etcd: members = %d: must be > 0", n)
	}
	e := &Etcd{dir: dir}
	if dir == "" {
		d, err := os.MkdirTemp("", "etcd-bench-")
		if err != nil {
			return nil, fmt.Errorf("etcd: %w", err)
		}
		e.dir, e.rmDir = d, true
	}
	scheme := "http"
	var info transport.TLSInfo
	if sec != nil {
		scheme = "https"
		info = transport.TLSInfo{CertFile: sec.Cert, KeyFile: sec.Key, TrustedCAFile: sec.CA, ClientCertAuth: true}
	}
	u := func(port int) url.URL { return url.URL{Scheme: scheme, Host: "127.0.0.1:" + strconv.Itoa(port)} }
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("m%d=%s://127.0.0.1:%d", i, scheme, base+100+i))
	}
	var endpoints []string
	var wg sync.WaitGroup
	errs := make([]error, n)
	e.members = make([]*embed.Etcd, n)
	for i := range n {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = filepath.Join(e.dir, cfg.Name)
		cfg.ListenClientUrls = []url.URL{u(base + i)}
		cfg.AdvertiseClientUrls = cfg.ListenClientUrls
		cfg.ListenPeerUrls = []url.URL{u(base + 100 + i)}
		cfg.AdvertisePeerUrls = cfg.ListenPeerUrls
		cfg.ListenMetricsUrls = nil
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = "ledgerd-bench"
		cfg.ClusterState = embed.ClusterStateFlagNew
		cfg.LogLevel = "panic" // shutdown reports closed listeners at error level
		cfg.QuotaBackendBytes = 8 << 30
		if sec != nil {
			cfg.ClientTLSInfo, cfg.PeerTLSInfo = info, info
		}
		endpoints = append(endpoints, cfg.ListenClientUrls[0].Host)
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := embed.StartEtcd(cfg)
			if err != nil {
				errs[i] = fmt.Errorf("etcd member %d: %w", i, err)
				return
			}
			e.members[i] = m
			select {
			case <-m.Server.ReadyNotify():
			case <-time.After(60 * time.Second):
				errs[i] = fmt.Errorf("etcd member %d: not ready after 60s", i)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		e.Close()
		return nil, err
	}
	ccfg := clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if sec != nil {
		tc, err := info.ClientConfig()
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("etcd client TLS: %w", err)
		}
		ccfg.TLS = tc
	}
	cli, err := clientv3.New(ccfg)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	e.cli = cli
	return e, nil
}

// Name implements service.System.
func (e *Etcd) Name() string { return "etcd" }

// Setup implements service.System: one key per resource holding its
// capacity and (empty) booking list; existing keys are kept.
func (e *Etcd) Setup(ctx context.Context, resources []string, capacity int64) error {
	doc := (&resourceDoc{Capacity: capacity}).encode()
	for _, r := range resources {
		k := etcdPrefix + r
		if _, err := e.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
			Then(clientv3.OpPut(k, string(doc))).Commit(); err != nil {
			return fmt.Errorf("etcd setup %s: %w", r, err)
		}
	}
	return nil
}

// update reads the resource's list, lets fn change it, and commits the new
// list if the key's revision is still the one read; on a conflict it
// starts over.
func (e *Etcd) update(ctx context.Context, resource string, fn func(*resourceDoc) error) error {
	k := etcdPrefix + resource
	for {
		got, err := e.cli.Get(ctx, k)
		if err != nil {
			return fmt.Errorf("etcd get %s: %w", k, err)
		}
		if len(got.Kvs) == 0 {
			return fmt.Errorf("etcd: resource %s: not found", resource)
		}
		kv := got.Kvs[0]
		doc, err := decodeDoc(kv.Value)
		if err != nil {
			return fmt.Errorf("etcd %s: %w", k, err)
		}
		if err := fn(doc); err != nil {
			return err
		}
		tr, err := e.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", kv.ModRevision)).
			Then(clientv3.OpPut(k, string(doc.encode()))).Commit()
		if err != nil {
			return fmt.Errorf("etcd txn %s: %w", k, err)
		}
		if tr.Succeeded {
			return nil
		}
		e.Conflicts.Add(1)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("etcd retry %s: %w", k, err)
		}
	}
}

func (e *Etcd) add(ctx context.Context, s service.Shape, state byte) (service.Booking, error) {
	id := e.ids.Add(1)
	var start int64
	err := e.update(ctx, s.Resource, func(d *resourceDoc) error {
		st, ok := service.EarliestFit(d.intervals(0), d.Capacity, s.Amount, s.Duration, s.NotBefore, s.Deadline)
		if !ok {
			return service.ErrRejected
		}
		start = st
		d.Entries = append(d.Entries, entry{ID: id, Start: st, End: st + s.Duration, Amount: s.Amount, State: state})
		return nil
	})
	if err != nil {
		return service.Booking{}, err
	}
	return service.Booking{ID: strconv.FormatUint(id, 10), Shape: s, Start: start}, nil
}

func parseID(b service.Booking) (uint64, error) {
	id, err := strconv.ParseUint(b.ID, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("booking id %q: %w", b.ID, err)
	}
	return id, nil
}

var errNotFound = errors.New("booking not found")

// Reserve implements service.System.
func (e *Etcd) Reserve(ctx context.Context, s service.Shape) (service.Booking, error) {
	return e.add(ctx, s, stateCommitted)
}

// HoldCommit implements service.System: a held entry, then a second
// compare-and-put that marks it committed.
func (e *Etcd) HoldCommit(ctx context.Context, s service.Shape) (service.Booking, error) {
	b, err := e.add(ctx, s, stateHeld)
	if err != nil {
		return b, err
	}
	id, _ := parseID(b)
	err = e.update(ctx, s.Resource, func(d *resourceDoc) error {
		i := d.find(id)
		if i < 0 {
			return errNotFound
		}
		d.Entries[i].State = stateCommitted
		return nil
	})
	return b, err
}

// Modify implements service.System: the new shape must fit with the old
// one taken out; the swap is one compare-and-put.
func (e *Etcd) Modify(ctx context.Context, b service.Booking, s service.Shape) (service.Booking, error) {
	id, err := parseID(b)
	if err != nil {
		return b, err
	}
	if s.Resource != b.Shape.Resource {
		return b, fmt.Errorf("modify: resource %q: must stay %q", s.Resource, b.Shape.Resource)
	}
	var start int64
	err = e.update(ctx, s.Resource, func(d *resourceDoc) error {
		i := d.find(id)
		if i < 0 {
			return errNotFound
		}
		st, ok := service.EarliestFit(d.intervals(id), d.Capacity, s.Amount, s.Duration, s.NotBefore, s.Deadline)
		if !ok {
			return service.ErrRejected
		}
		start = st
		d.Entries[i] = entry{ID: id, Start: st, End: st + s.Duration, Amount: s.Amount, State: stateCommitted}
		return nil
	})
	if err != nil {
		return b, err
	}
	return service.Booking{ID: b.ID, Shape: s, Start: start}, nil
}

// Cancel implements service.System.
func (e *Etcd) Cancel(ctx context.Context, b service.Booking) error {
	id, err := parseID(b)
	if err != nil {
		return err
	}
	return e.update(ctx, b.Shape.Resource, func(d *resourceDoc) error {
		i := d.find(id)
		if i < 0 {
			return errNotFound
		}
		d.Entries = append(d.Entries[:i], d.Entries[i+1:]...)
		return nil
	})
}

// Read implements service.System: a linearizable Get of the resource.
func (e *Etcd) Read(ctx context.Context, b service.Booking) error {
	id, err := parseID(b)
	if err != nil {
		return err
	}
	got, err := e.cli.Get(ctx, etcdPrefix+b.Shape.Resource)
	if err != nil {
		return fmt.Errorf("etcd get: %w", err)
	}
	if len(got.Kvs) == 0 {
		return errNotFound
	}
	d, err := decodeDoc(got.Kvs[0].Value)
	if err != nil {
		return err
	}
	if d.find(id) < 0 {
		return errNotFound
	}
	return nil
}

// ErrorCode implements service.System.
func (e *Etcd) ErrorCode(err error) string {
	switch {
	case errors.Is(err, errNotFound):
		return "not_found"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	}
	return "other"
}

// Verify implements service.Verifier: every resource's list, read back,
// stays within its capacity at every instant.
func (e *Etcd) Verify(ctx context.Context) (int, error) {
	got, err := e.cli.Get(ctx, etcdPrefix, clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("etcd read back: %w", err)
	}
	n := 0
	for _, kv := range got.Kvs {
		d, err := decodeDoc(kv.Value)
		if err != nil {
			return n, fmt.Errorf("%s: %w", kv.Key, err)
		}
		n += len(d.Entries)
		if err := service.Overbooked(d.intervals(0), d.Capacity); err != nil {
			return n, fmt.Errorf("%s: %w", kv.Key, err)
		}
	}
	return n, nil
}

// Close implements service.System: stops the client and every member.
func (e *Etcd) Close() error {
	var errs []error
	if e.cli != nil {
		errs = append(errs, e.cli.Close())
	}
	for _, m := range e.members {
		if m != nil {
			m.Close()
		}
	}
	if e.rmDir {
		errs = append(errs, os.RemoveAll(e.dir))
	}
	return errors.Join(errs...)
}
