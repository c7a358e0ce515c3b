// Package ui serves ledgerd's web UI: a timeline of the schedule and a
// booking form, built from the TypeScript sources under web/ into dist/ and
// embedded in the binary, so the agent serves it with no network access and
// no build step at run time.
//
// The UI is one more client of the public API: the page talks to the
// agent's Connect services (same origin, bearer token from a login form
// kept in the browser's session storage) and sees exactly what the token
// may see. This package therefore holds no ledger logic and must not
// import rpc, fsm or cluster: it serves static files and the security
// headers that go with them (a strict Content-Security-Policy among them).
//
// Callers mount Handler at Path ("/ui/") and may redirect "/" there with
// RedirectRoot. dist/ is generated: edit web/src and run `make ui-build`;
// `make ui-check` proves the committed bundle is what the sources build.
package ui
