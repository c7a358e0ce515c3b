package ui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
	"github.com/ledgerd/ledgerd/gen/ledgerd/v1/ledgerdv1connect"
	"github.com/ledgerd/ledgerd/internal/testbin"
	"github.com/ledgerd/ledgerd/internal/testnet"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// chromium returns the path of a Chromium binary: $LEDGERD_CHROMIUM, or
// Debian's chromium on $PATH. Without one the browser tests skip, except
// under CI=true, where a missing browser is a failure.
func chromium(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("browser tests skipped in -short mode")
	}
	if p := os.Getenv("LEDGERD_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "BROWSER TESTS SKIPPED: no chromium on $PATH (apt-get install chromium, or set LEDGERD_CHROMIUM)"
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg + "; CI=true requires it")
	}
	tb.Skip(msg)
	return ""
}

// browser starts a headless Chromium with a fresh profile and returns a
// context for its first tab. The flags keep Chromium from phoning home:
// without them its background connections are refused in sandboxes and it
// logs errors unrelated to the page.
func browser(tb testing.TB) context.Context {
	tb.Helper()
	bin := chromium(tb)
	// Not tb.TempDir: Chromium's helper processes may still write into the
	// profile for a moment after the browser is gone, which fails
	// TempDir's strict removal. This one is removed best-effort.
	profile, err := os.MkdirTemp("", "ledgerd-ui-chromium-")
	if err != nil {
		tb.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(profile),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	tb.Cleanup(func() {
		cancelB()
		cancelA()
		for range 3 {
			if os.RemoveAll(profile) == nil {
				return
			}
		}
		tb.Logf("could not remove the browser profile %s", profile)
	})
	if err := chromedp.Run(ctx); err != nil {
		tb.Fatalf("start chromium %s: %v", bin, err)
	}
	return ctx
}

// tab is one browser tab (its own session storage) with everything the
// page reports as an error collected.
type tab struct {
	ctx     context.Context
	mu      sync.Mutex
	errors  []string
	dialogs []string
}

// newTab opens a tab in the browser of parent.
func newTab(tb testing.TB, parent context.Context) *tab {
	tb.Helper()
	ctx, cancel := chromedp.NewContext(parent)
	tb.Cleanup(cancel)
	t := &tab{ctx: ctx}
	chromedp.ListenTarget(ctx, func(ev any) {
		t.mu.Lock()
		defer t.mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError || e.Type == runtime.APITypeAssert {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				t.errors = append(t.errors, "console.error: "+strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			t.errors = append(t.errors, "exception: "+e.ExceptionDetails.Error())
		case *log.EventEntryAdded:
			if e.Entry.Level == log.LevelError {
				t.errors = append(t.errors, "log: "+e.Entry.Text+" "+e.Entry.URL)
			}
		case *page.EventJavascriptDialogOpening:
			t.dialogs = append(t.dialogs, string(e.Type)+": "+e.Message)
			go func() { _ = chromedp.Run(ctx, page.HandleJavaScriptDialog(false)) }()
		}
	})
	if err := chromedp.Run(ctx, log.Enable(), runtime.Enable(), page.Enable()); err != nil {
		tb.Fatal(err)
	}
	return t
}

// run runs actions in the tab under a deadline that fails the test loudly.
func (t *tab) run(tb testing.TB, what string, actions ...chromedp.Action) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(t.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		tb.Fatalf("%s: %v (page errors so far: %v; page state: %s)", what, err, t.problems(), t.state())
	}
}

// state describes the page for a failure message.
func (t *tab) state() string {
	ctx, cancel := context.WithTimeout(t.ctx, 3*time.Second)
	defer cancel()
	var s string
	_ = chromedp.Run(ctx, chromedp.Evaluate(`JSON.stringify({url: location.href,
		status: document.getElementById('status')?.textContent, live: document.getElementById('live')?.textContent,
		errors: [...document.querySelectorAll('.error')].map(e => e.id + ': ' + e.textContent).filter(s => !s.endsWith(': ')),
		perf: window.ledgerdUI ? {first: window.ledgerdUI.perf().first, visible: window.ledgerdUI.perf().lastVisible, connected: window.ledgerdUI.connected()} : null})`, &s))
	return s
}

func (t *tab) problems() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append(append([]string(nil), t.errors...), t.dialogs...)
}

// signIn loads the UI at base and signs in with token, then waits until
// the timeline has drawn its first frame with data and Watch is live.
func (t *tab) signIn(tb testing.TB, base, token string) {
	tb.Helper()
	t.run(tb, "sign in",
		// Background tabs get no animation frames: bring this one forward.
		page.BringToFront(),
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible("#token", chromedp.ByID),
		chromedp.SendKeys("#token", token, chromedp.ByID),
		chromedp.Click(`#login-form button[type="submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#canvas", chromedp.ByID),
		waitJS(`window.ledgerdUI && window.ledgerdUI.perf().first !== null && window.ledgerdUI.connected()`),
	)
}

// waitJS polls a JavaScript condition until it is true (under the
// caller's deadline): the page is asynchronous, so tests wait for states,
// never for fixed times.
func waitJS(expr string) chromedp.Action {
	return chromedp.Poll(expr, nil, chromedp.WithPollingInterval(25*time.Millisecond))
}

// agent is a real `ledgerd agent -dev` process.
type agent struct {
	addr string
	bin  string
	args []string
	cmd  *exec.Cmd // nil while stopped
}

// Tokens of the test tokens file.
const (
	tokenA  = "token-tenant-a"
	tokenB  = "token-tenant-b"
	tokenOp = "token-operator"
)

// startAgent builds ledgerd and starts `ledgerd agent -dev` with a tokens
// file (tenant-a, tenant-b, an operator) on a reserved loopback port; it
// returns once the dev banner says the sample data is in.
func startAgent(tb testing.TB, withTokens bool) *agent {
	tb.Helper()
	bin := testbin.Ledgerd(tb)
	dir := tb.TempDir()
	var extra []string
	if withTokens {
		tokens := filepath.Join(dir, "tokens.json")
		b, _ := json.Marshal(map[string]any{"tokens": []map[string]any{
			{"token": tokenA, "tenant": "tenant-a"},
			{"token": tokenB, "tenant": "tenant-b"},
			{"token": tokenOp, "tenant": "ops", "operator": true},
		}})
		if err := os.WriteFile(tokens, b, 0o600); err != nil {
			tb.Fatal(err)
		}
		extra = []string{"-tokens-file", tokens}
	}
	a := &agent{bin: bin}
	testnet.Start(tb, 1, func(addrs []string) error {
		a.addr = addrs[0]
		a.args = append([]string{"agent", "-dev", "-http-addr", addrs[0], "-data-dir", filepath.Join(dir, addrs[0])}, extra...)
		return a.start()
	})
	tb.Cleanup(a.kill)
	return a
}

// start runs the agent process (again, on the same address and data
// directory) and waits for its dev banner.
func (a *agent) start() error {
	cmd := exec.Command(a.bin, a.args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var logs strings.Builder
	var logMu sync.Mutex
	cmd.Stderr = writerFunc(func(p []byte) (int, error) { logMu.Lock(); defer logMu.Unlock(); return logs.Write(p) })
	if err := cmd.Start(); err != nil {
		return err
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		seen := false
		for sc.Scan() {
			if !seen && strings.Contains(sc.Text(), "Web UI: http://"+a.addr+"/ui/") {
				seen = true
				ready <- nil
			}
		}
		if !seen {
			ready <- fmt.Errorf("agent exited before its banner")
		}
	}()
	select {
	case err = <-ready:
	case <-time.After(60 * time.Second):
		err = fmt.Errorf("no dev banner after 60s")
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logMu.Lock()
		defer logMu.Unlock()
		return fmt.Errorf("%w: %s", err, logs.String())
	}
	a.cmd = cmd
	return nil
}

// crash kills the agent (SIGKILL) and waits for it. (Not SIGTERM: a
// graceful stop waits for open Watch streams, the page's among them, until
// the agent's 30 s shutdown deadline.)
func (a *agent) crash(tb testing.TB) {
	tb.Helper()
	a.kill()
	a.cmd = nil
}

func (a *agent) kill() {
	if a.cmd != nil {
		_ = a.cmd.Process.Kill()
		_ = a.cmd.Wait()
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

var _ io.Writer = writerFunc(nil)

func (a *agent) url() string { return "http://" + a.addr }

// cli runs a ledgerd client subcommand against the agent and returns its
// standard output.
func (a *agent) cli(tb testing.TB, token string, args ...string) string {
	tb.Helper()
	full := append([]string{args[0], "-addr", a.addr, "-token", token}, args[1:]...)
	out, err := exec.Command(a.bin, full...).CombinedOutput()
	if err != nil {
		tb.Fatalf("ledgerd %s: %v\n%s", strings.Join(full, " "), err, out)
	}
	return string(out)
}

// reserveCLI books with `ledgerd reserve -json` and returns the reservation.
func (a *agent) reserveCLI(tb testing.TB, token string, args ...string) *reservationJSON {
	tb.Helper()
	out := a.cli(tb, token, append([]string{"reserve", "-json"}, args...)...)
	var r reservationJSON
	if err := json.Unmarshal([]byte(strings.SplitN(strings.TrimSpace(out), "\n", 2)[0]), &r); err != nil {
		tb.Fatalf("reserve output %q: %v", out, err)
	}
	return &r
}

type reservationJSON struct {
	ID     string            `json:"id"`
	Tenant string            `json:"tenant"`
	State  string            `json:"state"`
	Labels map[string]string `json:"labels"`
}

// client is a Connect client of the agent that sends token.
func (a *agent) client(token string) ledgerdv1connect.ReservationServiceClient {
	return ledgerdv1connect.NewReservationServiceClient(http.DefaultClient, a.url(),
		connect.WithInterceptors(bearer(token)))
}

func bearer(token string) connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			if token != "" {
				req.Header().Set("Authorization", "Bearer "+token)
			}
			return next(ctx, req)
		}
	}
}

// list returns the ids of every live reservation the token sees.
func (a *agent) list(tb testing.TB, token string) []string {
	tb.Helper()
	var ids []string
	page := ""
	for {
		resp, err := a.client(token).List(context.Background(), connect.NewRequest(&ledgerdv1.ListRequest{
			States: []ledgerdv1.ReservationState{ledgerdv1.ReservationState_RESERVATION_STATE_HELD,
				ledgerdv1.ReservationState_RESERVATION_STATE_COMMITTED, ledgerdv1.ReservationState_RESERVATION_STATE_ACTIVE,
				ledgerdv1.ReservationState_RESERVATION_STATE_DEGRADED},
			PageSize: 1000, PageToken: page,
		}))
		if err != nil {
			tb.Fatalf("List: %v", err)
		}
		for _, r := range resp.Msg.Reservations {
			ids = append(ids, r.Id)
		}
		if page = resp.Msg.NextPageToken; page == "" {
			return ids
		}
	}
}
