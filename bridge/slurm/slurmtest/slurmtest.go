// Package slurmtest starts a real Slurm for tests: munge, slurmctld and N
// fake slurmd nodes (one process each, all on this machine), in a fresh
// temporary directory, on loopback ports reserved for the test, and stops
// all of it when the test ends.
//
// It needs Debian's slurmctld, slurmd, slurm-client and munge packages and
// root (slurmd starts jobs as their users). Without them Start skips the
// test with a loud reason, except under CI=true, where a missing Slurm is a
// failure. With LEDGERD_SLURM=off it always skips (not under CI).
//
// What the tests do as root: munged, slurmctld and slurmd are started as
// root; slurmctld drops to SlurmUser (the Debian "slurm" account when it
// exists, else root) and the state and log directories belong to it. Jobs
// are submitted as root. The bridge's driver is meant to run as SlurmUser:
// Cluster.SlurmUser names the account to give slurm.Config.User.
//
// What it must not do: reuse a directory (an old StateSaveLocation brings
// back old reservations or stops slurmctld with a cluster name mismatch),
// talk to any Slurm but its own (every command gets SLURM_CONF), wait for
// anything without a deadline, or leave a process running after the test.
// It is test support only: product code must not import it.
package slurmtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ledgerd/ledgerd/internal/testnet"
)

// Options shape the cluster. The zero value is four nodes.
type Options struct {
	// Nodes is the number of fake nodes, n1..nN (default 4).
	Nodes int
	// ReadyTimeout bounds the wait for the controller and the nodes
	// (default 60 s: it usually takes under a second).
	ReadyTimeout time.Duration
}

// Cluster is a running test Slurm. Methods that take a testing.TB fail that
// test (so a subtest passes its own t); Env, Command and Try may be called
// from any goroutine.
type Cluster struct {
	// Dir holds slurm.conf, state, spool and logs; removed at cleanup.
	Dir string
	// Conf is the path of slurm.conf.
	Conf string
	// Partition is the one partition, holding every node.
	Partition string
	// NodeNames are n1..nN.
	NodeNames []string
	// SlurmUser is the account slurmctld runs as ("slurm" or "root").
	SlurmUser string

	tb      testing.TB
	timeout time.Duration
	mu      sync.Mutex
	ctld    *proc
	munge   *proc
	slurmds []*proc
}

// binaries Start needs.
var binaries = []string{"munged", "slurmctld", "slurmd", "scontrol", "sinfo", "sbatch", "squeue", "scancel"}

// Available reports whether a Slurm can be started here, and if not why.
func Available() (ok bool, reason string) {
	if os.Getenv("LEDGERD_SLURM") == "off" {
		return false, "LEDGERD_SLURM=off"
	}
	var missing []string
	for _, b := range binaries {
		if Bin(b) == "" {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return false, "missing " + strings.Join(missing, ", ") +
			" (apt-get install slurmctld slurmd slurm-client munge)"
	}
	if os.Geteuid() != 0 {
		return false, "not root: slurmd must run as root to start jobs"
	}
	return true, ""
}

// Bin returns the path of a Slurm or munge program: from $PATH, else from
// /usr/sbin or /usr/bin (a root shell without /usr/sbin on $PATH still
// finds the daemons). "" when it is nowhere.
func Bin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// Require skips the test (fails it under CI=true) when no Slurm can be
// started here.
func Require(tb testing.TB) {
	tb.Helper()
	ok, reason := Available()
	if ok {
		return
	}
	msg := "SLURM TESTS SKIPPED: " + reason
	if os.Getenv("CI") == "true" && reason != "LEDGERD_SLURM=off" {
		tb.Fatal(msg + "; CI=true requires a real Slurm")
	}
	if testing.Short() {
		tb.Skip("slurm tests skipped in -short mode")
	}
	tb.Skip(msg)
}

// Start starts munge, slurmctld and the nodes, waits until the controller
// answers and every node is idle, and registers the cleanup that stops
// them. It fails the test (loudly, with the logs' tails) if that does not
// happen within Options.ReadyTimeout.
func Start(tb testing.TB, opts Options) *Cluster {
	tb.Helper()
	Require(tb)
	if testing.Short() {
		tb.Skip("slurm tests skipped in -short mode")
	}
	if opts.Nodes <= 0 {
		opts.Nodes = 4
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 60 * time.Second
	}
	dir, err := os.MkdirTemp("", "ledgerd-slurm-")
	if err != nil {
		tb.Fatal(err)
	}
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf"), Partition: "debug", tb: tb, timeout: opts.ReadyTimeout}
	tb.Cleanup(c.stop)
	for i := 1; i <= opts.Nodes; i++ {
		c.NodeNames = append(c.NodeNames, "n"+strconv.Itoa(i))
	}
	c.SlurmUser = "root"
	if _, err := user.Lookup("slurm"); err == nil {
		c.SlurmUser = "slurm"
	}
	if err := c.layout(opts.Nodes); err != nil {
		tb.Fatalf("slurmtest: prepare %s: %v", dir, err)
	}
	c.munge = c.spawn(tb, "munged", "munged", "-F", "-f",
		"--socket="+c.path("munge/munge.sock"), "--key-file="+c.path("key/munge.key"),
		"--pid-file="+c.path("munge/munged.pid"), "--seed-file="+c.path("munge/munged.seed"),
		"--log-file="+c.path("log/munged.log"))
	c.waitFor(tb, "munged's socket", func() error {
		_, err := os.Stat(c.path("munge/munge.sock"))
		return err
	})
	c.StartController(tb)
	for _, n := range c.NodeNames {
		c.slurmds = append(c.slurmds, c.spawn(tb, "slurmd-"+n, "slurmd", "-D", "-N", n, "-f", c.Conf))
	}
	c.WaitNodesIdle(tb, len(c.NodeNames))
	return c
}

func (c *Cluster) path(rel string) string { return filepath.Join(c.Dir, rel) }

// layout writes the directories, the munge key and slurm.conf.
func (c *Cluster) layout(nodes int) error {
	for _, d := range []struct {
		rel  string
		mode os.FileMode
	}{{"", 0o755}, {"munge", 0o755}, {"key", 0o700}, {"state", 0o700}, {"spool", 0o755}, {"log", 0o777}, {"jobs", 0o777}} {
		if err := os.MkdirAll(c.path(d.rel), d.mode); err != nil {
			return err
		}
		if err := os.Chmod(c.path(d.rel), d.mode); err != nil { // umask
			return err
		}
	}
	key := make([]byte, 1024)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	if err := os.WriteFile(c.path("key/munge.key"), key, 0o400); err != nil {
		return err
	}
	u, err := user.Lookup(c.SlurmUser)
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for _, rel := range []string{"state", "log"} {
		if err := os.Chown(c.path(rel), uid, gid); err != nil {
			return err
		}
	}
	// Ports from the shared reservation of this module's tests: two for
	// the controller and the default slurmd port, one per node.
	ports, err := testnet.Ports(2 + nodes)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, `# Written by slurmtest for one test; the directory is removed afterwards.
ClusterName=ltest
SlurmctldHost=localhost
SlurmctldPort=%d
SlurmdPort=%d
SlurmUser=%s
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%s
StateSaveLocation=%s
SlurmdSpoolDir=%s/%%n
SlurmctldPidFile=%s
SlurmdPidFile=%s/slurmd-%%n.pid
SlurmctldLogFile=%s
SlurmdLogFile=%s/slurmd-%%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,bf_interval=1
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=600
MessageTimeout=3
`, ports[0], ports[1], c.SlurmUser, c.path("munge/munge.sock"), c.path("state"), c.path("spool"),
		c.path("slurmctld.pid"), c.Dir, c.path("log/slurmctld.log"), c.path("log"))
	for i := 1; i <= nodes; i++ {
		fmt.Fprintf(&b, "NodeName=n%d NodeHostname=localhost Port=%d CPUs=4 Sockets=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN\n", i, ports[1+i])
	}
	fmt.Fprintf(&b, "PartitionName=%s Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n", c.Partition)
	return os.WriteFile(c.Conf, []byte(b.String()), 0o644)
}

// Env returns the environment entries every Slurm command needs to reach
// this cluster.
func (c *Cluster) Env() []string { return []string{"SLURM_CONF=" + c.Conf} }

// Command returns a Slurm client command aimed at this cluster, run as
// root in Dir.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if p := Bin(name); p != "" {
		name = p
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), c.Env()...)
	cmd.Dir = c.Dir
	return cmd
}

// Run runs a Slurm client command (as root) within the cluster's timeout
// and returns its standard output; it fails the test on error.
func (c *Cluster) Run(tb testing.TB, name string, args ...string) string {
	tb.Helper()
	out, err := c.Try(name, args...)
	if err != nil {
		tb.Fatalf("slurmtest: %s %s: %v", name, strings.Join(args, " "), err)
	}
	return out
}

// ShowReservations returns Slurm's reservations as `scontrol show
// reservation -o` prints them (run as root, times in UTC), each as its
// key=value fields, by name: a test's view of Slurm that does not go
// through the driver under test.
func (c *Cluster) ShowReservations(tb testing.TB) map[string]map[string]string {
	tb.Helper()
	cmd := c.Command(context.Background(), "scontrol", "show", "reservation", "-o")
	cmd.Env = append(cmd.Env, "TZ=UTC")
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("slurmtest: scontrol show reservation -o: %v", err)
	}
	res := map[string]map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "ReservationName=") {
			continue
		}
		kv := map[string]string{}
		for _, w := range strings.Fields(line) {
			k, v, _ := strings.Cut(w, "=")
			kv[k] = v
		}
		res[kv["ReservationName"]] = kv
	}
	return res
}

// Try is Run that returns the error (with stderr) instead of failing.
func (c *Cluster) Try(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	cmd := c.Command(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%w: %s", err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// StartController starts slurmctld (again, after StopController: its
// state directory keeps the reservations) and waits until `scontrol ping`
// says UP.
func (c *Cluster) StartController(tb testing.TB) {
	tb.Helper()
	c.mu.Lock()
	if c.ctld != nil {
		c.mu.Unlock()
		tb.Fatal("slurmtest: slurmctld already running")
	}
	c.mu.Unlock()
	p := c.spawn(tb, "slurmctld", "slurmctld", "-D", "-f", c.Conf)
	c.mu.Lock()
	c.ctld = p
	c.mu.Unlock()
	c.waitFor(tb, "scontrol ping UP", func() error {
		select {
		case <-p.done:
			return errStop{fmt.Errorf("slurmctld exited: %v", p.err)}
		default:
		}
		out, err := c.Try("scontrol", "ping")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "is UP") {
			return fmt.Errorf("scontrol ping: %s", strings.TrimSpace(out))
		}
		return nil
	})
}

// StopController stops slurmctld (SIGTERM, then SIGKILL after the grace
// period) and waits for it to exit. Nodes and jobs keep running.
func (c *Cluster) StopController(tb testing.TB) {
	tb.Helper()
	c.mu.Lock()
	p := c.ctld
	c.ctld = nil
	c.mu.Unlock()
	if p == nil {
		tb.Fatal("slurmtest: slurmctld not running")
	}
	p.stop(tb)
}

// KillController kills slurmctld with SIGKILL, as a crash would, and
// waits for it to exit. It may be called from any goroutine (a nemesis in
// the middle of a round); it reports a controller that is not running with
// tb.Error.
func (c *Cluster) KillController(tb testing.TB) {
	tb.Helper()
	c.mu.Lock()
	p := c.ctld
	c.ctld = nil
	c.mu.Unlock()
	if p == nil {
		tb.Error("slurmtest: slurmctld not running")
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// WaitNodesIdle waits until sinfo counts n idle nodes.
func (c *Cluster) WaitNodesIdle(tb testing.TB, n int) {
	tb.Helper()
	want := strconv.Itoa(n)
	c.waitFor(tb, want+" idle nodes", func() error {
		out, err := c.Try("sinfo", "-h", "-t", "idle", "-o", "%D")
		if err != nil {
			return err
		}
		if got := strings.TrimSpace(out); got != want {
			return fmt.Errorf("sinfo counts %q idle nodes", got)
		}
		return nil
	})
}

// errStop ends a waitFor early: retrying cannot help.
type errStop struct{ error }

// waitFor polls check every 50 ms until it succeeds; past the deadline it
// fails the test with check's last error and the logs' tails.
func (c *Cluster) waitFor(tb testing.TB, what string, check func() error) {
	tb.Helper()
	deadline := time.Now().Add(c.timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		var stop errStop
		if errors.As(err, &stop) || time.Now().After(deadline) {
			tb.Fatalf("slurmtest: no %s within %v: %v\n%s", what, c.timeout, err, c.LogTails())
		}
		time.Sleep(50 * time.Millisecond) // polling a process we do not control
	}
}

// LogTails returns the last lines of every log, for failure messages.
func (c *Cluster) LogTails() string {
	var b strings.Builder
	files, _ := filepath.Glob(c.path("log/*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(f), strings.Join(lines, "\n"))
	}
	return b.String()
}

// proc is one daemon started by the cluster.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// spawn starts a daemon in the foreground, its output in log/NAME.out.
func (c *Cluster) spawn(tb testing.TB, name, bin string, args ...string) *proc {
	tb.Helper()
	out, err := os.OpenFile(c.path("log/"+name+".out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(Bin(bin), args...)
	cmd.Env = append(os.Environ(), c.Env()...)
	cmd.Dir = c.Dir
	cmd.Stdout, cmd.Stderr = out, out
	// Own process group: a signal to the test's group does not reach it
	// half-way, and stop can end the group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		tb.Fatalf("slurmtest: start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	return p
}

// grace is how long a daemon gets to exit after SIGTERM.
const grace = 5 * time.Second

// stop sends SIGTERM, waits up to grace, then SIGKILLs the process group.
func (p *proc) stop(tb testing.TB) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		tb.Logf("slurmtest: %s ignored SIGTERM for %v; killing it", p.name, grace)
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// stop cancels every job, stops the nodes, the controller and munge, kills
// whatever is left in the directory (job steps outlive slurmd with
// proctrack/linuxproc), and removes the directory unless the test failed.
func (c *Cluster) stop() {
	c.mu.Lock()
	ctld := c.ctld
	c.mu.Unlock()
	if ctld != nil {
		_, _ = c.Try("scancel", "--full", "--quiet", "--user=root")
	}
	// Job steps first: a slurmd with a step still running ignores SIGTERM.
	killLeftovers(c.tb, c.Dir, func(comm string) bool { return comm == "slurmstepd" })
	var wg sync.WaitGroup
	for _, p := range c.slurmds {
		wg.Go(func() { p.stop(c.tb) })
	}
	wg.Wait()
	if ctld != nil {
		ctld.stop(c.tb)
	}
	if c.munge != nil {
		c.munge.stop(c.tb)
	}
	killLeftovers(c.tb, c.Dir, func(string) bool { return true })
	if c.tb.Failed() && os.Getenv("LEDGERD_SLURM_KEEP") != "" {
		c.tb.Logf("slurmtest: kept %s for inspection", c.Dir)
		return
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		c.tb.Errorf("slurmtest: remove %s: %v", c.Dir, err)
	}
}

// killLeftovers SIGKILLs every process whose working directory or command
// line lies in dir and whose command name match accepts: job steps
// (slurmstepd and the job's script) outlive slurmd.
func killLeftovers(tb testing.TB, dir string, match func(comm string) bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if !match(strings.TrimSpace(string(comm))) {
			continue
		}
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if cwd == dir || strings.HasPrefix(cwd, dir+"/") || bytes.Contains(cmdline, []byte(dir+"/")) {
			tb.Logf("slurmtest: killing leftover process %d (%s)", pid, strings.ReplaceAll(string(cmdline), "\x00", " "))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
