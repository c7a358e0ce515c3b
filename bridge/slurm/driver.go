package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ledgerd/ledgerd/bridge"
)

// Config configures a Driver. Prefix is required; the rest has defaults.
type Config struct {
	// Prefix marks the reservations the driver owns ("ledgerd-"). It
	// must be non-empty and use only [A-Za-z0-9._-].
	Prefix string
	// Env is added to the environment of every command, e.g.
	// SLURM_CONF=/etc/slurm/slurm.conf for a non-default configuration.
	Env []string
	// Zone is the zone times are written and read in. scontrol converts
	// wall-clock times with the zone of its own process, so the driver
	// sets TZ for scontrol to this zone: Slurm shows the same local time
	// as the controller when Zone is the controller's zone. Default UTC,
	// which has no ambiguous hour at a daylight-saving change.
	Zone *time.Location
	// User is the account commands run as when the process is root:
	// Slurm's SlurmUser ("slurm"), which may manage reservations. Empty
	// runs them as the process's own user, which must then be SlurmUser,
	// root or a Slurm operator.
	User string
	// IgnoreJobs adds Flags=IGNORE_JOBS when creating: the reservation
	// is made even if running jobs' time limits reach into it (the ledger
	// decided; Slurm's jobs are not the ledger's business).
	IgnoreJobs bool
	// Scontrol and Sinfo are the commands' paths; default from $PATH.
	Scontrol, Sinfo string
	// Backoff bounds the waits between retries while the controller is
	// unreachable: doubling from Initial up to Max. Defaults 200 ms, 10 s.
	Backoff Backoff
	// OnRetry, if set, is called before each wait with the operation, the
	// attempt that failed (1 for the first) and its error; for logs and
	// metrics. It must not block.
	OnRetry func(op string, attempt int, err error)
	// Exec runs one command; nil runs it for real. Tests substitute it.
	Exec Exec
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Backoff is an exponential backoff without jitter (there is one bridge
// per site, so there is no herd to spread).
type Backoff struct{ Initial, Max time.Duration }

// Exec runs name with args and returns what it printed. err is non-nil
// when the command could not run or exited non-zero.
type Exec func(ctx context.Context, name string, args []string) (stdout, stderr []byte, err error)

// Driver manages Slurm reservations with scontrol and reads nodes with
// sinfo. It implements bridge.Driver and is safe for concurrent use (it
// keeps no state between calls).
type Driver struct {
	cfg  Config
	exec Exec
	now  func() time.Time
}

var _ bridge.Driver = (*Driver)(nil)

// New checks cfg and returns a driver. Nothing is contacted yet.
func New(cfg Config) (*Driver, error) {
	if err := bridge.ValidName(cfg.Prefix+"x", cfg.Prefix); err != nil {
		return nil, fmt.Errorf("slurm driver: prefix: %w", err)
	}
	if cfg.Zone == nil {
		cfg.Zone = time.UTC
	}
	if _, err := time.LoadLocation(cfg.Zone.String()); err != nil || cfg.Zone.String() == "Local" {
		return nil, fmt.Errorf("slurm driver: zone %q: name a zone of the zone database (e.g. Europe/Berlin), so that TZ can be set for scontrol", cfg.Zone.String())
	}
	if cfg.Scontrol == "" {
		cfg.Scontrol = "scontrol"
	}
	if cfg.Sinfo == "" {
		cfg.Sinfo = "sinfo"
	}
	if cfg.Backoff.Initial <= 0 {
		cfg.Backoff.Initial = 200 * time.Millisecond
	}
	if cfg.Backoff.Max < cfg.Backoff.Initial {
		cfg.Backoff.Max = max(10*time.Second, cfg.Backoff.Initial)
	}
	d := &Driver{cfg: cfg, exec: cfg.Exec, now: cfg.Now}
	if d.now == nil {
		d.now = time.Now
	}
	if d.exec == nil {
		run, err := realExec(cfg)
		if err != nil {
			return nil, err
		}
		d.exec = run
	}
	return d, nil
}

// Prefix returns the prefix of the reservations the driver owns.
func (d *Driver) Prefix() string { return d.cfg.Prefix }

// realExec runs commands with TZ and Env set and, when the process is
// root and cfg.User is set, as that user with no supplementary groups.
func realExec(cfg Config) (Exec, error) {
	var cred *syscall.Credential
	if cfg.User != "" && os.Geteuid() == 0 {
		u, err := user.Lookup(cfg.User)
		if err != nil {
			return nil, fmt.Errorf("slurm driver: user %q: %w", cfg.User, err)
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("slurm driver: user %q: uid %q / gid %q are not numbers", cfg.User, u.Uid, u.Gid)
		}
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	}
	env := append(os.Environ(), cfg.Env...)
	env = append(env, "TZ="+cfg.Zone.String())
	return func(ctx context.Context, name string, args []string) ([]byte, []byte, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = env
		cmd.Dir = os.TempDir() // the SlurmUser may not enter the caller's directory
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.Bytes(), errb.Bytes(), err
	}, nil
}

// run executes one command, retrying with backoff while the controller is
// unreachable. unknown reports whether an earlier attempt failed in a way
// that leaves its effect unknown (the controller may have acted).
func (d *Driver) run(ctx context.Context, op, name string, bin string, args ...string) (out string, unknown bool, err error) {
	wait := d.cfg.Backoff.Initial
	for attempt := 1; ; attempt++ {
		stdout, stderr, runErr := d.exec(ctx, bin, args)
		if runErr == nil {
			return string(stdout), unknown, nil
		}
		msg := strings.TrimSpace(string(stderr))
		if msg == "" {
			msg = strings.TrimSpace(string(stdout))
		}
		var exitErr *exec.ExitError
		if !errors.As(runErr, &exitErr) && ctx.Err() == nil {
			// Not an exit status: the command could not be started.
			return "", unknown, &bridge.Error{Op: op, Name: name, Kind: bridge.ErrOther, Message: fmt.Sprintf("%s: %v", bin, runErr)}
		}
		kind := classify(op, msg)
		if ctx.Err() != nil {
			kind = bridge.ErrUnavailable
			msg = fmt.Sprintf("%s (%v)", msg, ctx.Err())
		}
		e := &bridge.Error{Op: op, Name: name, Kind: kind, Message: msg}
		if kind != bridge.ErrUnavailable || ctx.Err() != nil {
			return "", unknown, e
		}
		unknown = true
		if d.cfg.OnRetry != nil {
			d.cfg.OnRetry(op, attempt, e)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			e.Message = fmt.Sprintf("%s (gave up after %d attempts: %v)", msg, attempt, ctx.Err())
			return "", unknown, e
		case <-t.C:
		}
		wait = min(2*wait, d.cfg.Backoff.Max)
	}
}

// Messages Slurm prints (stderr) and the kinds they map to; the first
// match wins. They are the strerror texts of Slurm's error codes, stable
// across releases.
var messages = []struct {
	text string
	kind error
}{
	{"unable to contact slurm controller", bridge.ErrUnavailable},
	{"socket timed out", bridge.ErrUnavailable},
	{"zero bytes were transmitted or received", bridge.ErrUnavailable},
	{"communication connection failure", bridge.ErrUnavailable},
	{"connection refused", bridge.ErrUnavailable},
	{"in standby mode", bridge.ErrUnavailable},
	// scontrol create prints this (22.05) when it cannot connect at all.
	{"unexpected message received", bridge.ErrUnavailable},
	{"overlaps with another reservation", bridge.ErrOverlap},
	{"requested nodes are busy", bridge.ErrNodesBusy},
	{"duplicate reservation name", bridge.ErrDuplicateName},
	{"invalid reservation name", bridge.ErrInvalidName},
	{"invalid time specified", bridge.ErrTimeInPast},
	{"reservation is in use", bridge.ErrInUse},
	{"invalid node name specified", bridge.ErrInvalidNodes},
	{"invalid user id", bridge.ErrInvalidUser},
	{"invalid group id", bridge.ErrInvalidUser},
	{"invalid account", bridge.ErrInvalidUser},
}

// classify maps scontrol's message to a kind. "Requested reservation is
// invalid" means an unknown name on update and delete.
func classify(op, msg string) error {
	m := strings.ToLower(msg)
	for _, x := range messages {
		if strings.Contains(m, x.text) {
			return x.kind
		}
	}
	if strings.Contains(m, "requested reservation is invalid") && (op == "update" || op == "delete") {
		return bridge.ErrUnknownReservation
	}
	if strings.Contains(m, "partition") && strings.Contains(m, "not found") {
		return bridge.ErrUnknownPartition
	}
	return bridge.ErrOther
}

// Reservations lists every reservation Slurm holds, owned or not.
func (d *Driver) Reservations(ctx context.Context) ([]bridge.Reservation, error) {
	out, _, err := d.run(ctx, "list", "", d.cfg.Scontrol, "show", "reservation", "-o")
	if err != nil {
		return nil, err
	}
	res, err := ParseReservations(out, d.cfg.Zone)
	if err != nil {
		return nil, fmt.Errorf("list reservations: %w", err)
	}
	return res, nil
}

// Reservation reads one reservation back; ErrUnknownReservation when
// there is none of that name.
func (d *Driver) Reservation(ctx context.Context, name string) (bridge.Reservation, error) {
	all, err := d.Reservations(ctx)
	if err != nil {
		return bridge.Reservation{}, err
	}
	for _, r := range all {
		if r.Name == name {
			return r, nil
		}
	}
	return bridge.Reservation{}, &bridge.Error{Op: "read", Name: name, Kind: bridge.ErrUnknownReservation}
}

// Nodes lists the nodes of a partition with their states, in natural
// order of their names.
func (d *Driver) Nodes(ctx context.Context, partition string) ([]bridge.Node, error) {
	if partition == "" || strings.ContainsAny(partition, " ,=\t\n") {
		return nil, &bridge.Error{Op: "nodes", Name: partition, Kind: bridge.ErrUnknownPartition, Message: "partition: empty or contains a space, comma or '='"}
	}
	// scontrol says when the partition does not exist; sinfo prints nothing.
	if _, _, err := d.run(ctx, "nodes", partition, d.cfg.Scontrol, "show", "partition", partition, "-o"); err != nil {
		return nil, err
	}
	out, _, err := d.run(ctx, "nodes", partition, d.cfg.Sinfo, "-h", "-N", "-p", partition, "-O", "NodeList:|,StateComplete:|,Reason:")
	if err != nil {
		return nil, err
	}
	nodes, err := ParseNodes(out)
	if err != nil {
		return nil, fmt.Errorf("nodes of partition %s: %w", partition, err)
	}
	return nodes, nil
}

func (d *Driver) owned(op, name string) error {
	if err := bridge.ValidName(name, d.cfg.Prefix); err != nil {
		kind := bridge.ErrInvalidName
		if !bridge.Owns(d.cfg.Prefix, name) {
			kind = bridge.ErrNotOwned
		}
		return &bridge.Error{Op: op, Name: name, Kind: kind, Message: err.Error()}
	}
	return nil
}

func (d *Driver) timeArg(t time.Time) string { return t.In(d.cfg.Zone).Format(TimeLayout) }

// startArg writes a start that has passed as "now": Slurm refuses a start
// in the past ("Invalid time specified").
func (d *Driver) startArg(t, now time.Time) string {
	if !t.After(now) {
		return "now"
	}
	return d.timeArg(t)
}

// Create makes the reservation with explicit Nodes= (never NodeCnt=, which
// Slurm silently shrinks) and StartTime/EndTime (Duration= is rounded up
// to whole minutes). A start that is not in the future is sent as
// StartTime=now. If an attempt's outcome was unknown (controller lost) and
// a retry finds the name taken, the reservation is read back: when it is
// the one asked for, Create succeeds, so a retry never reports its own
// first attempt as a duplicate.
func (d *Driver) Create(ctx context.Context, spec bridge.Spec) error {
	if err := d.owned("create", spec.Name); err != nil {
		return err
	}
	if err := spec.Validate(d.cfg.Prefix); err != nil {
		return &bridge.Error{Op: "create", Name: spec.Name, Kind: bridge.ErrOther, Message: err.Error()}
	}
	spec = spec.Normalize()
	now := d.now()
	if !spec.End.After(now) {
		return &bridge.Error{Op: "create", Name: spec.Name, Kind: bridge.ErrTimeInPast,
			Message: fmt.Sprintf("end %s is not after now", d.timeArg(spec.End))}
	}
	start := d.startArg(spec.Start, now)
	args := []string{"create", "reservation", "ReservationName=" + spec.Name,
		"StartTime=" + start, "EndTime=" + d.timeArg(spec.End), "Nodes=" + strings.Join(spec.Nodes, ",")}
	if len(spec.Users) > 0 {
		args = append(args, "Users="+strings.Join(spec.Users, ","))
	}
	if len(spec.Accounts) > 0 {
		args = append(args, "Accounts="+strings.Join(spec.Accounts, ","))
	}
	if d.cfg.IgnoreJobs {
		args = append(args, "Flags=IGNORE_JOBS")
	}
	_, unknown, err := d.run(ctx, "create", spec.Name, d.cfg.Scontrol, args...)
	if err != nil && unknown && errors.Is(err, bridge.ErrDuplicateName) {
		have, rerr := d.Reservation(ctx, spec.Name)
		if rerr == nil && len(bridge.Diff(spec, have, d.now())) == 0 {
			return nil
		}
	}
	return err
}

// Update writes the fields in which have differs from want. Users and
// accounts are set as whole lists; a list that must become empty is
// cleared by removing its members (Users-=...), in the same command as the
// other list's new members, so Slurm never sees a reservation with
// neither.
func (d *Driver) Update(ctx context.Context, want bridge.Spec, have bridge.Reservation) error {
	if err := d.owned("update", want.Name); err != nil {
		return err
	}
	if have.Name != want.Name {
		return &bridge.Error{Op: "update", Name: want.Name, Kind: bridge.ErrOther, Message: fmt.Sprintf("have is reservation %q", have.Name)}
	}
	if err := want.Validate(d.cfg.Prefix); err != nil {
		return &bridge.Error{Op: "update", Name: want.Name, Kind: bridge.ErrOther, Message: err.Error()}
	}
	want = want.Normalize()
	fields := bridge.Diff(want, have, d.now())
	if len(fields) == 0 {
		return nil
	}
	args := []string{"update", "ReservationName=" + want.Name}
	for _, f := range fields {
		switch f {
		case bridge.FieldNodes:
			args = append(args, "Nodes="+strings.Join(want.Nodes, ","))
		case bridge.FieldStart:
			args = append(args, "StartTime="+d.startArg(want.Start, d.now()))
		case bridge.FieldEnd:
			args = append(args, "EndTime="+d.timeArg(want.End))
		case bridge.FieldUsers:
			args = append(args, listArg("Users", want.Users, have.Users))
		case bridge.FieldAccounts:
			args = append(args, listArg("Accounts", want.Accounts, have.Accounts))
		}
	}
	_, _, err := d.run(ctx, "update", want.Name, d.cfg.Scontrol, args...)
	return err
}

func listArg(key string, want, have []string) string {
	if len(want) == 0 {
		return key + "-=" + strings.Join(have, ",")
	}
	return key + "=" + strings.Join(want, ",")
}

// Delete removes an owned reservation. After an attempt whose outcome was
// unknown, a retry that finds no such reservation counts as success.
func (d *Driver) Delete(ctx context.Context, name string) error {
	if err := d.owned("delete", name); err != nil {
		return err
	}
	_, unknown, err := d.run(ctx, "delete", name, d.cfg.Scontrol, "delete", "ReservationName="+name)
	if err != nil && unknown && errors.Is(err, bridge.ErrUnknownReservation) {
		return nil
	}
	return err
}
