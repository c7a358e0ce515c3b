package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/rpc"
	"github.com/ledgerd/ledgerd/rpc/client"
)

// Exit codes of the client subcommands.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitRejected = 3 // no capacity in the requested window, or over a tenant limit
)

// defaultAddr is where the client looks for an agent without -addr or
// LEDGERD_ADDR.
const defaultAddr = "127.0.0.1:7420"

// Output streams and clock of the client subcommands; tests replace them.
var (
	cliOut io.Writer = os.Stdout
	cliErr io.Writer = os.Stderr
	cliNow           = time.Now
)

// clientFlags are the flags every client subcommand shares.
type clientFlags struct {
	addr     string
	token    string
	caFile   string
	certFile string
	keyFile  string
	tls      bool
	json     bool
	timeout  time.Duration
}

// newFlagSet returns a flag set with the shared client flags registered.
func newFlagSet(name, args string) (*flag.FlagSet, *clientFlags) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(cliErr)
	cf := &clientFlags{}
	fs.StringVar(&cf.addr, "addr", envOr("LEDGERD_ADDR", defaultAddr), "comma-separated agent addresses (host:port or URL); env LEDGERD_ADDR")
	fs.StringVar(&cf.token, "token", os.Getenv("LEDGERD_TOKEN"), "bearer token; env LEDGERD_TOKEN")
	fs.StringVar(&cf.caFile, "ca-file", os.Getenv("LEDGERD_CACERT"), "PEM CA bundle to verify the agents (implies -tls); env LEDGERD_CACERT")
	fs.StringVar(&cf.certFile, "cert-file", os.Getenv("LEDGERD_CLIENT_CERT"), "client certificate for mutual TLS (implies -tls)")
	fs.StringVar(&cf.keyFile, "key-file", os.Getenv("LEDGERD_CLIENT_KEY"), "client key for mutual TLS")
	fs.BoolVar(&cf.tls, "tls", false, "use https with the system roots")
	fs.BoolVar(&cf.json, "json", false, "print JSON instead of a table")
	fs.DurationVar(&cf.timeout, "timeout", 30*time.Second, "deadline of the whole command")
	fs.Usage = func() {
		fmt.Fprintf(cliErr, "Usage: ledgerd %s [flags] %s\n\nFlags:\n", name, args)
		fs.PrintDefaults()
	}
	return fs, cf
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// parse parses args, allowing positional arguments between flags
// ("commit ID -json"), and maps -h and flag errors to exit codes; ok is
// false when the command must stop with code. Afterwards fs.Args() holds
// the positional arguments in order.
func parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return exitOK, false
			}
			return exitUsage, false
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
	// Re-parse only the positional arguments so fs.Args() returns them.
	_ = fs.Parse(append([]string{"--"}, positional...))
	return 0, true
}

// usageErr prints a usage error and returns exitUsage; with -json, as
// one JSON object on stderr.
func usageErr(fs *flag.FlagSet, format string, a ...any) int {
	msg := fmt.Sprintf(format, a...)
	if f := fs.Lookup("json"); f != nil && f.Value.String() == "true" {
		printErrJSON(cliError{Command: fs.Name(), Code: "usage", Message: msg, Exit: exitUsage})
		return exitUsage
	}
	fmt.Fprintf(cliErr, "ledgerd %s: %s\n", fs.Name(), msg)
	fmt.Fprintf(cliErr, "Run `ledgerd %s -h` for usage.\n", fs.Name())
	return exitUsage
}

// checkPositive refuses a duration flag that was given but is not > 0
// (a negative -ttl must not fall back to the default silently).
func checkPositive(fs *flag.FlagSet, name string, d time.Duration) error {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	if set && d <= 0 {
		return fmt.Errorf("-%s must be > 0, got %s", name, d)
	}
	return nil
}

// tlsConfig builds the client TLS configuration from the flags, or nil.
func (cf *clientFlags) tlsConfig() (*tls.Config, error) {
	if !cf.tls && cf.caFile == "" && cf.certFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cf.caFile != "" {
		pem, err := os.ReadFile(cf.caFile)
		if err != nil {
			return nil, fmt.Errorf("-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-ca-file: %s holds no PEM certificate", cf.caFile)
		}
		cfg.RootCAs = pool
	}
	if cf.certFile != "" || cf.keyFile != "" {
		cert, err := tls.LoadX509KeyPair(cf.certFile, cf.keyFile)
		if err != nil {
			return nil, fmt.Errorf("-cert-file/-key-file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// client connects to the agents named by the flags.
func (cf *clientFlags) client() (*client.Client, error) {
	tc, err := cf.tlsConfig()
	if err != nil {
		return nil, err
	}
	return client.New(strings.Split(cf.addr, ","), client.Options{Token: cf.token, TLS: tc})
}

// withClient connects to the agents named by the flags and runs call with
// the command's context. An error from either is printed under name and
// becomes the exit code fail gives it; otherwise the code is exitOK.
func (cf *clientFlags) withClient(name string, call func(context.Context, *client.Client) error) int {
	c, err := cf.client()
	if err != nil {
		return fail(name, err)
	}
	ctx, cancel := cf.context()
	defer cancel()
	if err := call(ctx, c); err != nil {
		return cf.fail(name, err)
	}
	return exitOK
}

// fail is the package fail, or with -json its JSON form.
func (cf *clientFlags) fail(name string, err error) int {
	if !cf.json {
		return fail(name, err)
	}
	e := cliError{Command: name, Code: connect.CodeOf(err).String(), Message: humanize(connectMessage(err)), Exit: exitError}
	if rej, ok := rpc.Rejection(err); ok {
		e.Code, e.Exit = "rejected", exitRejected
		if rej.Message != "" {
			e.Message = humanize(rej.Message)
		}
		if rej.EarliestStart != nil {
			e.EarliestStart = fmtTime(rej.EarliestStart)
		}
	}
	if _, ok := rpc.LimitExceeded(err); ok {
		e.Code, e.Exit = "limit_exceeded", exitRejected
		e.Message = humanize(strings.TrimPrefix(connectMessage(err), name+": "))
	}
	if f, ok := rpc.BadField(err); ok {
		e.Field = f
	}
	printErrJSON(e)
	return e.Exit
}

// cliError is an error as -json prints it: one object on stderr.
type cliError struct {
	Command       string `json:"command"`
	Code          string `json:"code"`
	Message       string `json:"message"`
	Field         string `json:"field,omitempty"`
	EarliestStart string `json:"earliest_start,omitempty"`
	Exit          int    `json:"exit_code"`
}

func printErrJSON(e cliError) {
	b, err := json.Marshal(struct {
		Error cliError `json:"error"`
	}{e})
	if err != nil {
		fmt.Fprintf(cliErr, "ledgerd %s: %s\n", e.Command, e.Message)
		return
	}
	fmt.Fprintln(cliErr, string(b))
}

// unixMillis finds the Unix milliseconds the ledger's messages carry
// ("must not be before the log time 1893456000000").
var unixMillis = regexp.MustCompile(`\b(1\d{12}|[2-9]\d{12}|\d{14,15})\b`)

// stateEnum finds a state's enum spelling (STATE_ABORTED,
// RESERVATION_STATE_ABORTED) in a message.
var stateEnum = regexp.MustCompile(`\b(?:RESERVATION_)?STATE_([A-Z]+)\b`)

// humanize rewrites a server message for people: instants as RFC 3339,
// states as the tables print them (ABORTED).
func humanize(msg string) string {
	msg = unixMillis.ReplaceAllStringFunc(msg, func(s string) string {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil || ms > 253402300799999 {
			return s
		}
		return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
	})
	return stateEnum.ReplaceAllString(msg, "$1")
}

// context returns the command's context: the -timeout deadline, cancelled
// on interrupt.
func (cf *clientFlags) context() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	if cf.timeout <= 0 {
		return ctx, stop
	}
	ctx, cancel := context.WithTimeout(ctx, cf.timeout)
	return ctx, func() { cancel(); stop() }
}

// fail prints err and returns the exit code for it: exitRejected for a
// capacity rejection or a tenant limit's refusal, exitError otherwise.
func fail(name string, err error) int {
	if rej, ok := rpc.Rejection(err); ok {
		msg := "rejected: no capacity in the requested window"
		if rej.Message != "" {
			// The ledger's reason, e.g. why a policy did not admit it.
			msg = "rejected: " + rej.Message
		}
		if rej.EarliestStart != nil {
			msg += "; earliest start that would fit: " + fmtTime(rej.EarliestStart)
		}
		fmt.Fprintf(cliErr, "ledgerd %s: %s\n", name, humanize(msg))
		return exitRejected
	}
	if _, ok := rpc.LimitExceeded(err); ok {
		// The message names the limit, the usage and what would fit.
		fmt.Fprintf(cliErr, "ledgerd %s: refused: %s\n", name, humanize(strings.TrimPrefix(connectMessage(err), name+": ")))
		return exitRejected
	}
	if _, ok := rpc.BadField(err); ok {
		// The message names the field already ("invalid shape.duration: ...").
		fmt.Fprintf(cliErr, "ledgerd %s: %s\n", name, humanize(connectMessage(err)))
		return exitError
	}
	fmt.Fprintf(cliErr, "ledgerd %s: %s\n", name, humanize(err.Error()))
	return exitError
}

func connectMessage(err error) string {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Message()
	}
	return err.Error()
}

// parseTime reads an absolute RFC 3339 time, "now", or a time relative to
// now such as "+2h" or "-30m".
func parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "now":
		return cliNow(), nil
	case strings.HasPrefix(s, "+"), strings.HasPrefix(s, "-"):
		d, err := parseDuration(s[1:])
		if err != nil {
			return time.Time{}, fmt.Errorf("relative time %q: %w", s, err)
		}
		if s[0] == '-' {
			d = -d
		}
		return cliNow().Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q: want RFC 3339 (2030-01-02T15:04:05Z), now, or +duration", s)
	}
	return t, nil
}

// maxDays is the longest duration in days that a time.Duration holds.
const maxDays = float64(math.MaxInt64) / float64(24*time.Hour)

// parseDuration is time.ParseDuration plus a "d" (24h) unit.
func parseDuration(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.ParseFloat(n, 64)
		if err != nil {
			return 0, fmt.Errorf("duration %q: %w", s, err)
		}
		if math.Abs(days) >= maxDays || math.IsNaN(days) {
			return 0, fmt.Errorf("duration %q: out of range (at most %.0fd)", s, math.Floor(maxDays))
		}
		return time.Duration(days * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", s, err)
	}
	return d, nil
}

// timeFlag is a flag.Value holding an optional time.
type timeFlag struct{ t *time.Time }

// String implements flag.Value.
func (f *timeFlag) String() string {
	if f.t == nil || f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339)
}

// Set implements flag.Value.
func (f *timeFlag) Set(s string) error {
	t, err := parseTime(s)
	if err != nil {
		return err
	}
	*f.t = t
	return nil
}

// durFlag is a flag.Value holding a duration with the "d" unit.
type durFlag struct{ d *time.Duration }

// String implements flag.Value.
func (f *durFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

// Set implements flag.Value.
func (f *durFlag) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*f.d = d
	return nil
}

// kvFlag collects repeated key=value flags.
type kvFlag map[string]string

// String implements flag.Value.
func (f kvFlag) String() string { return "" }

// Set implements flag.Value.
func (f kvFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	f[k] = v
	return nil
}

// parseParts reads "cpu=16,gpu=2".
func parseParts(s string) ([]*ledgerdv1.ResourceAmount, error) {
	var out []*ledgerdv1.ResourceAmount
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, amount, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("-res: want resource=amount, got %q", item)
		}
		n, err := strconv.ParseInt(amount, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("-res: amount of %q: %w", name, err)
		}
		out = append(out, &ledgerdv1.ResourceAmount{Resource: name, Amount: n})
	}
	if len(out) == 0 {
		return nil, errors.New("-res is required (e.g. -res cpu=16,gpu=2)")
	}
	return out, nil
}

// shapeFlags are the flags describing a request shape.
type shapeFlags struct {
	res               string
	dur               time.Duration
	after, before, at time.Time
}

func (sf *shapeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&sf.res, "res", "", "resources and amounts, e.g. cpu=16,gpu=2 (required)")
	fs.Var(&durFlag{&sf.dur}, "dur", "duration, e.g. 90m, 2h, 1d (required)")
	fs.Var(&timeFlag{&sf.after}, "after", "earliest start (RFC 3339, now, +2h); default now")
	fs.Var(&timeFlag{&sf.before}, "before", "latest end (deadline); default none")
	fs.Var(&timeFlag{&sf.at}, "at", "exact start; excludes -after and -before")
}

func (sf *shapeFlags) shape() (*ledgerdv1.Shape, error) {
	parts, err := parseParts(sf.res)
	if err != nil {
		return nil, err
	}
	switch {
	case sf.dur == 0:
		return nil, errors.New("-dur is required (e.g. -dur 90m)")
	case sf.dur < 0:
		return nil, fmt.Errorf("-dur must be > 0, got %s", sf.dur)
	}
	s := &ledgerdv1.Shape{Parts: parts, Duration: durationpb.New(sf.dur)}
	if !sf.at.IsZero() {
		if !sf.after.IsZero() || !sf.before.IsZero() {
			return nil, errors.New("-at excludes -after and -before")
		}
		s.ExactStart = timestamppb.New(sf.at)
		return s, nil
	}
	if !sf.after.IsZero() {
		s.NotBefore = timestamppb.New(sf.after)
	}
	if !sf.before.IsZero() {
		s.Deadline = timestamppb.New(sf.before)
	}
	return s, nil
}

// fmtTime prints a timestamp in UTC, RFC 3339.
func fmtTime(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return "-"
	}
	return ts.AsTime().UTC().Format(time.RFC3339)
}

// printJSON writes messages as protojson, one per line.
func printJSON(ms ...proto.Message) {
	opts := protojson.MarshalOptions{UseProtoNames: true}
	for _, m := range ms {
		b, err := opts.Marshal(m)
		if err != nil {
			fmt.Fprintf(cliErr, "json: %v\n", err)
			continue
		}
		fmt.Fprintln(cliOut, string(b))
	}
}

// table returns a tab writer on cliOut.
func table() *tabwriter.Writer { return tabwriter.NewWriter(cliOut, 0, 0, 2, ' ', 0) }

// cell makes free text (labels, units, reasons) safe for a table cell on a
// terminal: a string with a control character (a tab or newline that
// would break the columns, an escape sequence that would drive the
// reader's terminal) is printed Go-quoted, the rest as it is.
func cell(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	return strconv.Quote(s)
}

func stateName(s ledgerdv1.ReservationState) string {
	return strings.TrimPrefix(s.String(), "RESERVATION_STATE_")
}

func partsString(ps []*ledgerdv1.ResourceAmount) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf("%s=%d", p.Resource, p.Amount)
	}
	return strings.Join(out, ",")
}

// printReservations prints reservations as a table or JSON lines.
func printReservations(asJSON bool, rs ...*ledgerdv1.Reservation) {
	if asJSON {
		for _, r := range rs {
			printJSON(r)
		}
		return
	}
	w := table()
	units := anyReservationUnits(rs)
	if units {
		fmt.Fprintln(w, "ID\tTENANT\tKIND\tSTATE\tPARTS\tUNITS\tSTART\tEND\tHOLD EXPIRES\tPENDING\tSCHEDULING")
	} else {
		fmt.Fprintln(w, "ID\tTENANT\tKIND\tSTATE\tPARTS\tSTART\tEND\tHOLD EXPIRES\tPENDING\tSCHEDULING")
	}
	for _, r := range rs {
		pending := "-"
		if p := r.Pending; p != nil {
			pending = fmt.Sprintf("%s %s..%s", partsString(p.Parts), fmtTime(p.Start), fmtTime(p.End))
		}
		expires := "-"
		if r.State == ledgerdv1.ReservationState_RESERVATION_STATE_HELD || r.State == ledgerdv1.ReservationState_RESERVATION_STATE_PENDING_APPROVAL || r.Pending != nil {
			expires = fmtTime(r.HoldExpiresAt)
			if r.Pending != nil && r.Pending.HoldExpiresAt != nil {
				expires = fmtTime(r.Pending.HoldExpiresAt)
			}
		}
		end := fmtTime(r.End)
		if r.RequestedDuration != nil {
			// Completed early: the end is the actual one.
			end += " (early; booked " + r.RequestedDuration.AsDuration().String() + ")"
		}
		parts := partsString(r.Parts)
		if units {
			parts += "\t" + reservationUnits(r)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Id, r.Tenant, kindName(r.Kind), stateName(r.State), parts, fmtTime(r.Start), end, expires, pending, admissionNote(r))
	}
	w.Flush()
	printMaterializations(rs)
}
