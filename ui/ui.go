package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// Path is where the agent mounts Handler.
const Path = "/ui/"

// dist holds the built bundle (web/ → `make ui-build` → dist/).
//
//go:embed all:dist
var dist embed.FS

// ContentSecurityPolicy is sent with every response of Handler. Scripts,
// styles, images and API calls come from the agent itself only; nothing
// inline, no eval, no plugins, no framing, no form posts elsewhere. The page
// renders every user-supplied string as text, and this policy is the
// second line of defence should that ever fail.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; " +
	"frame-ancestors 'none'; object-src 'none'"

// securityHeaders are set on every response of Handler, errors included.
var securityHeaders = map[string]string{
	"Content-Security-Policy":      ContentSecurityPolicy,
	"X-Content-Type-Options":       "nosniff",
	"X-Frame-Options":              "DENY",
	"Referrer-Policy":              "no-referrer",
	"Cross-Origin-Opener-Policy":   "same-origin",
	"Cross-Origin-Resource-Policy": "same-origin",
	"Permissions-Policy":           "camera=(), microphone=(), geolocation=(), payment=()",
}

// Files returns the embedded bundle rooted at its index.html.
func Files() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic("ui: embedded dist missing: " + err.Error()) // cannot happen: the embed pattern names it
	}
	return sub
}

// Handler serves the embedded UI. Mount it at Path; it strips that prefix
// itself. index.html is served for Path and is never cached (it names the
// current asset files); the content-hashed files under assets/ are cached
// for a year. Only GET and HEAD are allowed.
func Handler() http.Handler {
	files := Files()
	fileServer := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for k, v := range securityHeaders {
			h.Set(k, v)
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, strings.TrimSuffix(Path, "/"))
		name = strings.TrimPrefix(path.Clean("/"+name), "/")
		switch {
		case name == "" || name == "index.html":
			h.Set("Cache-Control", "no-cache")
			serveIndex(w, r, files)
			return
		case strings.HasPrefix(name, "assets/"):
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		default:
			h.Set("Cache-Control", "no-cache")
		}
		if st, err := fs.Stat(files, name); err != nil || st.IsDir() {
			http.NotFound(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + name
		fileServer.ServeHTTP(w, r2)
	})
}

func serveIndex(w http.ResponseWriter, r *http.Request, files fs.FS) {
	b, err := fs.ReadFile(files, "index.html")
	if err != nil {
		http.Error(w, "ui: bundle not built (run make ui-build)", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(b)
}

// RedirectRoot answers "/" with a redirect to Path, so that a browser
// pointed at the agent's address lands on the UI.
func RedirectRoot() http.Handler {
	return http.RedirectHandler(Path, http.StatusFound)
}
