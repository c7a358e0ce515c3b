package ui_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	ledgerdv1 "github.com/ledgerd/ledgerd/gen/ledgerd/v1"
)

// xssLabel is a label that would run script if the page ever rendered a
// user-supplied string as HTML.
const xssLabel = `<img src=x onerror=alert(1)>`

// TestBrowser drives the UI in headless Chromium against a real
// `ledgerd agent -dev` with a tokens file, through the same API the CLI
// uses. One agent and one browser serve every subtest; each subtest opens
// its own tab (its own session storage, so its own sign-in).
//
// Set UI_SCREENSHOTS=<dir> to write the README's screenshots there.
func TestBrowser(t *testing.T) {
	ctx := browser(t)
	a := startAgent(t, true)
	shots := os.Getenv("UI_SCREENSHOTS")

	// Tenant A's reservations, one with a hostile label, made by the CLI.
	ra1 := a.reserveCLI(t, tokenA, "-res", "cpu=16", "-dur", "2h", "-after", "+1h", "-label", "team=astro")
	ra2 := a.reserveCLI(t, tokenA, "-res", "gpu=2,cpu=8", "-dur", "3h", "-after", "+30m", "-label", "note="+xssLabel)
	rb1 := a.reserveCLI(t, tokenB, "-res", "cpu=32", "-dur", "4h", "-after", "+2h", "-label", "team=bio")

	t.Run("timeline matches List, no console errors", func(t *testing.T) {
		tb := newTab(t, ctx)
		tb.signIn(t, a.url(), tokenA)
		want := a.list(t, tokenA)
		got := visibleIDs(t, tb)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("bars on the page %v, List says %v", got, want)
		}
		if !slices.Contains(got, ra1.ID) || !slices.Contains(got, ra2.ID) {
			t.Fatalf("tenant A's reservations %s, %s missing from %v", ra1.ID, ra2.ID, got)
		}
		tableIDs := tableRows(t, tb)
		if !slices.Equal(tableIDs, want) {
			t.Fatalf("table rows %v, List says %v", tableIDs, want)
		}
		if p := tb.problems(); len(p) > 0 {
			t.Fatalf("page reported errors: %v", p)
		}
		// The token lives in this tab's session storage only: not in the
		// URL, not in a cookie, not in local storage.
		var where struct {
			URL, Cookie, Session string
			Local                int
		}
		tb.run(t, "token storage", chromedp.Evaluate(`({URL: location.href, Cookie: document.cookie,
			Session: sessionStorage.getItem('ledgerd.token'), Local: localStorage.length})`, &where))
		if strings.Contains(where.URL, tokenA) || where.Cookie != "" || where.Local != 0 || where.Session != tokenA {
			t.Fatalf("token storage: %+v", where)
		}
		screenshot(t, tb, shots, "timeline")
	})

	t.Run("hostile label renders as text", func(t *testing.T) {
		tb := newTab(t, ctx)
		tb.signIn(t, a.url(), tokenA)
		tb.run(t, "open details", waitJS(fmt.Sprintf(`document.querySelector('#list tr[data-id=%q]') !== null`, ra2.ID)),
			chromedp.Click(fmt.Sprintf(`#list tr[data-id=%q] button`, ra2.ID), chromedp.ByQuery),
			waitJS(`document.getElementById('details-fields').textContent.includes('onerror')`))
		var detailsText, cellText string
		var imgs int
		tb.run(t, "read details",
			chromedp.Text("#details-fields", &detailsText, chromedp.ByID),
			chromedp.Text(fmt.Sprintf(`#list tr[data-id=%q]`, ra2.ID), &cellText, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelectorAll('main img').length`, &imgs))
		if !strings.Contains(detailsText, xssLabel) || !strings.Contains(cellText, xssLabel) {
			t.Fatalf("label not shown verbatim: details %q, table %q", detailsText, cellText)
		}
		if imgs != 0 {
			t.Fatalf("the label became %d <img> element(s)", imgs)
		}
		if p := tb.problems(); len(p) > 0 {
			t.Fatalf("page reported errors or dialogs: %v", p)
		}
	})

	t.Run("tenant B sees none of tenant A's bars", func(t *testing.T) {
		tb := newTab(t, ctx)
		tb.signIn(t, a.url(), tokenB)
		got := visibleIDs(t, tb)
		if slices.Contains(got, ra1.ID) || slices.Contains(got, ra2.ID) || !slices.Contains(got, rb1.ID) {
			t.Fatalf("tenant B's page shows %v; want %s and neither %s nor %s", got, rb1.ID, ra1.ID, ra2.ID)
		}
		for _, id := range tableRows(t, tb) {
			if id != rb1.ID {
				t.Fatalf("tenant B's table lists %s", id)
			}
		}
		// A reservation A makes now must not reach B's page either, while
		// B's own new one does (same stream, filtered by the server).
		a.reserveCLI(t, tokenA, "-res", "cpu=1", "-dur", "1h", "-after", "+90m")
		rb2 := a.reserveCLI(t, tokenB, "-res", "cpu=1", "-dur", "1h", "-after", "+95m")
		tb.run(t, "B's new reservation arrives", waitJS(fmt.Sprintf(`window.ledgerdUI.perf().visibleIds.includes(%q)`, rb2.ID)))
		got = visibleIDs(t, tb)
		want := a.list(t, tokenB)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("tenant B's bars %v, List for B says %v", got, want)
		}
	})

	t.Run("operator sees every tenant", func(t *testing.T) {
		tb := newTab(t, ctx)
		tb.signIn(t, a.url(), tokenOp)
		want := a.list(t, tokenOp)
		slices.Sort(want)
		tb.run(t, "all bars", waitJS(fmt.Sprintf(`window.ledgerdUI.perf().visibleIds.length === %d`, len(want))))
		if got := visibleIDs(t, tb); !slices.Equal(got, want) {
			t.Fatalf("operator's bars %v, List says %v", got, want)
		}
		screenshot(t, tb, shots, "operator")
	})

	t.Run("CLI event appears without reload", func(t *testing.T) {
		tb := newTab(t, ctx)
		tb.signIn(t, a.url(), tokenA)
		var before float64
		tb.run(t, "navigation start", chromedp.Evaluate(`performance.timeOrigin`, &before))
		r := a.reserveCLI(t, tokenA, "-res", "licenses=5", "-dur", "1h", "-after", "+3h", "-label", "via=cli")
		tb.run(t, "bar appears", waitJS(fmt.Sprintf(`window.ledgerdUI.perf().visibleIds.includes(%q) && document.querySelector('#list tr[data-id=%q]') !== null`, r.ID, r.ID)))
		a.cli(t, tokenA, "cancel", r.ID)
		tb.run(t, "bar leaves", waitJS(fmt.Sprintf(`!window.ledgerdUI.perf().visibleIds.includes(%q)`, r.ID)))
		var after float64
		tb.run(t, "same document", chromedp.Evaluate(`performance.timeOrigin`, &after))
		if before != after {
			t.Fatal("the page reloaded")
		}
	})

	t.Run("book through the form", func(t *testing.T) {
		tb := newTab(t, ctx)
		tb.signIn(t, a.url(), tokenA)
		tb.run(t, "fill the form",
			chromedp.SetValue("#part-resource-0", "gpu", chromedp.ByID),
			chromedp.SetValue("#part-amount-0", "3", chromedp.ByID),
			chromedp.SetValue("#duration", "90", chromedp.ByID),
			chromedp.SetValue("#labels", "project=web-form", chromedp.ByID),
			chromedp.Click("#find", chromedp.ByID),
			waitJS(`document.getElementById('fit').textContent.startsWith('Earliest fit')`))
		screenshot(t, tb, shots, "booking")
		tb.run(t, "hold", chromedp.Click("#hold", chromedp.ByID),
			chromedp.WaitVisible("#held", chromedp.ByID),
			waitJS(`document.getElementById('countdown').textContent.startsWith('expires in')`))
		var what string
		tb.run(t, "held id", chromedp.Text("#held-what", &what, chromedp.ByID))
		id := strings.Fields(what)[0]
		if out := a.cli(t, tokenA, "get", id); !strings.Contains(out, "HELD") {
			t.Fatalf("after Hold the CLI shows:\n%s", out)
		}
		screenshot(t, tb, shots, "hold")
		tb.run(t, "commit", chromedp.Click("#commit", chromedp.ByID),
			chromedp.WaitNotVisible("#held", chromedp.ByID),
			waitJS(`document.getElementById('fit').textContent.includes('committed')`))
		out := a.cli(t, tokenA, "get", id)
		if !strings.Contains(out, "COMMITTED") || !strings.Contains(out, "gpu=3") {
			t.Fatalf("the CLI shows the booked reservation as:\n%s", out)
		}
		r, err := a.client(tokenA).Get(context.Background(), connect.NewRequest(&ledgerdv1.GetRequest{Id: id}))
		if err != nil || r.Msg.Reservation.Labels["project"] != "web-form" {
			t.Fatalf("Get %s: %v %v", id, err, r)
		}
		tb.run(t, "bar drawn", waitJS(fmt.Sprintf(`window.ledgerdUI.perf().visibleIds.includes(%q)`, id)))
	})

	t.Run("modify then cancel from the details panel", func(t *testing.T) {
		tb := newTab(t, ctx)
		tb.signIn(t, a.url(), tokenA)
		sel := fmt.Sprintf(`#list tr[data-id=%q] button`, ra1.ID)
		tb.run(t, "modify", waitJS(fmt.Sprintf(`document.querySelector(%q) !== null`, sel)),
			chromedp.Click(sel, chromedp.ByQuery),
			waitJS(`[...document.querySelectorAll('#details-actions button')].some(b => b.textContent === 'Modify')`),
			chromedp.Evaluate(`[...document.querySelectorAll('#details-actions button')].find(b => b.textContent === 'Modify').click()`, nil),
			waitJS(`document.getElementById('book-mode').textContent.includes('Modifying')`),
			chromedp.SetValue("#part-amount-0", "4", chromedp.ByID),
			chromedp.Click("#hold", chromedp.ByID),
			chromedp.WaitVisible("#held", chromedp.ByID))
		if out := a.cli(t, tokenA, "get", ra1.ID); !strings.Contains(out, "cpu=4") {
			t.Fatalf("pending modification not visible to the CLI:\n%s", out)
		}
		tb.run(t, "commit change", chromedp.Click("#commit", chromedp.ByID), chromedp.WaitNotVisible("#held", chromedp.ByID))
		r, err := a.client(tokenA).Get(context.Background(), connect.NewRequest(&ledgerdv1.GetRequest{Id: ra1.ID}))
		if err != nil || r.Msg.Reservation.Pending != nil || r.Msg.Reservation.Parts[0].Amount != 4 {
			t.Fatalf("after commit: %v %v", err, r)
		}
		cancel := `[...document.querySelectorAll('#details-actions button')].find(b => b.textContent === 'Cancel reservation')`
		tb.run(t, "cancel", waitJS(cancel+` !== undefined`),
			chromedp.Evaluate(cancel+`.click()`, nil),
			waitJS(fmt.Sprintf(`!window.ledgerdUI.perf().visibleIds.includes(%q)`, ra1.ID)))
		if out := a.cli(t, tokenA, "get", ra1.ID); !strings.Contains(out, "CANCELLED") {
			t.Fatalf("after Cancel the CLI shows:\n%s", out)
		}
	})

	t.Run("rejected booking shows the field error", func(t *testing.T) {
		tb := newTab(t, ctx)
		tb.signIn(t, a.url(), tokenA)
		tb.run(t, "hold with amount 0",
			chromedp.SetValue("#part-amount-0", "0", chromedp.ByID),
			chromedp.Click("#hold", chromedp.ByID),
			waitJS(`document.getElementById('err-part-0').textContent !== ''`))
		var msg, invalid string
		var ok bool
		tb.run(t, "read error", chromedp.Text("#err-part-0", &msg, chromedp.ByID),
			chromedp.AttributeValue("#part-amount-0", "aria-invalid", &invalid, &ok, chromedp.ByID))
		if !strings.Contains(msg, "must be > 0") || !strings.Contains(msg, "amount") || invalid != "true" {
			t.Fatalf("field error %q (aria-invalid=%q)", msg, invalid)
		}
		tb.run(t, "duration 0",
			chromedp.SetValue("#part-amount-0", "1", chromedp.ByID),
			chromedp.SetValue("#duration", "0", chromedp.ByID),
			chromedp.Click("#hold", chromedp.ByID),
			waitJS(`document.getElementById('err-duration').textContent.includes('duration')`))
		screenshot(t, tb, shots, "field-error")
	})

	// Last: it restarts the agent. The page must notice the lost stream,
	// reconnect, and resume after the last event it saw, so an event made
	// while it was still backing off arrives without a reload.
	t.Run("Watch resumes after the agent restarts", func(t *testing.T) {
		tb := newTab(t, ctx)
		tb.signIn(t, a.url(), tokenA)
		var before, after float64
		tb.run(t, "navigation start", chromedp.Evaluate(`performance.timeOrigin`, &before))
		a.crash(t)
		tb.run(t, "stream lost", waitJS(`!window.ledgerdUI.connected()`))
		if err := a.start(); err != nil {
			t.Fatalf("restart agent: %v", err)
		}
		r := a.reserveCLI(t, tokenA, "-res", "cpu=2", "-dur", "1h", "-after", "+4h", "-label", "after=restart")
		tb.run(t, "reconnected with the new event",
			waitJS(fmt.Sprintf(`window.ledgerdUI.connected() && window.ledgerdUI.perf().visibleIds.includes(%q)`, r.ID)),
			chromedp.Evaluate(`performance.timeOrigin`, &after))
		if before != after {
			t.Fatal("the page reloaded")
		}
		want := a.list(t, tokenA)
		slices.Sort(want)
		if got := visibleIDs(t, tb); !slices.Equal(got, want) {
			t.Fatalf("after the restart the page shows %v, List says %v", got, want)
		}
	})

	t.Run("click a bar for its details", func(t *testing.T) {
		tb := newTab(t, ctx)
		tb.signIn(t, a.url(), tokenA)
		var rect []float64
		tb.run(t, "find the bar", waitJS(fmt.Sprintf(`window.ledgerdUI.barRect(%q) !== null`, ra2.ID)),
			chromedp.Evaluate(fmt.Sprintf(`window.ledgerdUI.barRect(%q)`, ra2.ID), &rect))
		tb.run(t, "click it", chromedp.MouseClickXY(rect[0]+rect[2]/2, rect[1]+rect[3]/2),
			waitJS(fmt.Sprintf(`document.getElementById('details-fields').textContent.includes(%q)`, ra2.ID)),
			waitJS(`document.querySelectorAll('#details-history li').length > 0 && !document.getElementById('details-history').textContent.includes('loading')`))
		var history string
		tb.run(t, "history", chromedp.Text("#details-history", &history, chromedp.ByID))
		if !strings.Contains(history, "→ committed") {
			t.Fatalf("history of %s: %q", ra2.ID, history)
		}
	})

	t.Run("dark scheme", func(t *testing.T) {
		tb := newTab(t, ctx)
		tb.run(t, "emulate dark", emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}))
		tb.signIn(t, a.url(), tokenOp)
		var bg, fg string
		tb.run(t, "colours", chromedp.Evaluate(`getComputedStyle(document.body).backgroundColor`, &bg),
			chromedp.Evaluate(`getComputedStyle(document.body).color`, &fg))
		if bg != "rgb(13, 17, 23)" || fg != "rgb(230, 237, 243)" {
			t.Fatalf("dark scheme: background %s, text %s", bg, fg)
		}
		screenshot(t, tb, shots, "operator-dark")
	})
}

// visibleIDs returns the ids of the reservations in the timeline's view,
// sorted, once the page has drawn every reservation it loaded.
func visibleIDs(t *testing.T, tb *tab) []string {
	t.Helper()
	var ids []string
	tb.run(t, "visible ids", chromedp.Evaluate(`[...window.ledgerdUI.perf().visibleIds].sort()`, &ids))
	return ids
}

// tableRows returns the ids of the table's rows, sorted.
func tableRows(t *testing.T, tb *tab) []string {
	t.Helper()
	var ids []string
	tb.run(t, "table rows",
		waitJS(`document.querySelectorAll('#list tbody tr').length === window.ledgerdUI.perf().visibleIds.length`),
		chromedp.Evaluate(`[...document.querySelectorAll('#list tbody tr')].map(r => r.dataset.id).sort()`, &ids))
	return ids
}

// screenshot writes the page as dir/name.png when dir is set.
func screenshot(t *testing.T, tb *tab, dir, name string) {
	t.Helper()
	if dir == "" {
		return
	}
	var png []byte
	tb.run(t, "screenshot",
		waitJS(`document.querySelectorAll('#list tbody tr').length === Math.min(200, window.ledgerdUI.perf().lastVisible)`),
		chromedp.FullScreenshot(&png, 100))
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
