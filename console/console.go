// Package console is a reviewer's console for kindgi: an http.Handler a
// host mounts in its own server, showing the pending approvals of the
// reviewer's tenants (to approve or deny with a reason), the runs with
// their journals and provenance, and the conversations with the runs that
// wrote them.
//
// Pages are rendered on the server with html/template from embedded
// templates; one small stylesheet and one small script are embedded too,
// so nothing is fetched from elsewhere and everything works without
// JavaScript (a reload shows what the script would). The run page is a
// debugger: one row per journal step on a waterfall of the run's wall
// time, each expanding (<details>) to its content — the rendered prompt,
// a model call's request and response with usage and cost, a tool call's
// arguments and result, the approval with who decided when and why,
// errors and every failed attempt — and the run's LastError while it is
// stuck retrying. Lists (runs, conversations, approvals) are counted,
// filtered and keyset-paged. Live pages (a running run, the pending
// approvals) refresh through server-sent events (GET /events) driven by
// the store's bindings.RunWatcher and a check every RefreshSeconds. The
// host brings its bindings (Options.Store: memstore and pgstore both fit)
// and its authentication (Options.Authenticate); TokenLogin is a
// ready-made one for a single shared token with server-side sessions,
// used by `kindgi console`.
//
// Security: every read is scoped to the tenants of the authenticated
// Reviewer (a run, approval or conversation of another tenant is not
// found); a reviewer below an approval's required role sees no decision
// buttons and a decision POST by them is refused (403); every POST carries
// a CSRF token bound to the reviewer and their session (HMAC-SHA256 under
// Options.CSRFKey, random at New when unset); responses carry a
// Content-Security-Policy without inline script or style and
// frame-ancestors 'none', X-Content-Type-Options nosniff, Referrer-Policy
// no-referrer and X-Frame-Options DENY.
package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"html/template"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

//go:embed templates/*.html assets/*
var files embed.FS

// Reviewer is the person using the console: who decides (ID, recorded on
// each decision), their reviewer role (standard < senior < admin; another
// role only meets an approval that asks for exactly that role) and the
// tenants whose runs and approvals they may see.
type Reviewer struct {
	ID        string
	Role      string
	TenantIDs []string
	// Session names the reviewer's sign-in session, when the
	// authentication has sessions (TokenLogin's Authenticate sets it): the
	// CSRF token is bound to it, so every login gets a new one.
	Session string
}

// Store is what the console reads and decides through: the run journal and
// its listing, approvals with the listing of one run's approvals,
// snapshots (for the agent of a run) and conversations. memstore.Store and
// pgstore.Store implement it.
type Store interface {
	bindings.RunBinding
	bindings.RunLister
	bindings.HitlBinding
	bindings.RunSnapshotBinding
	bindings.ConversationBinding
	// ListApprovals returns the approvals of one run, oldest first, in
	// their current state (expired when past ExpiresAt).
	ListApprovals(ctx context.Context, tenantID, runID string) ([]bindings.Approval, error)
}

// Options configure New.
type Options struct {
	// Store is read and decided through (required).
	Store Store
	// Authenticate names the reviewer of a request (required). An error
	// answers 401, or, with Login set, a redirect to /login for a GET.
	Authenticate func(*http.Request) (Reviewer, error)
	// Keys verifies provenance signatures; nil shows records unverified.
	Keys bindings.KeyProvider
	// CSRFKey keys the CSRF tokens (at least 32 bytes); empty is a random
	// key made by New (tokens then last as long as the handler).
	CSRFKey []byte
	// Login, when set, serves /login (GET and POST) unauthenticated:
	// TokenLogin is one.
	Login http.Handler
	// Logout, when set, ends the reviewer's session for POST /logout
	// (CSRF-checked), after which the console sends them to /login:
	// TokenLogin.Logout is one. The navigation offers "Sign out" only
	// with it.
	Logout func(http.ResponseWriter, *http.Request)
	// BasePath is the path prefix the handler is mounted under (for
	// instance "/console" with http.StripPrefix("/console", h)); links and
	// redirects start with it. Default "" (mounted at the root).
	BasePath string
	// RefreshSeconds is how often a live page's event stream checks the
	// store for changes a RunWatcher does not tell (a journal growing
	// inside a drive), and how often the script polls where the browser
	// has no EventSource (default 5; negative turns live pages off).
	RefreshSeconds int
	// Now is the clock for time-left figures (default time.Now).
	Now func() time.Time
	// SessionIdleTimeout, SessionMaxAge and SecureCookies configure a
	// *TokenLogin given as Login (its IdleTimeout, MaxAge and Secure; zero
	// leaves its own): a session ends after SessionIdleTimeout unused
	// (default DefaultIdleTimeout, 12 h) and SessionMaxAge after its login
	// (default DefaultMaxSessionAge), and SecureCookies marks every cookie
	// Secure (a request over TLS gets Secure cookies anyway).
	SessionIdleTimeout time.Duration
	SessionMaxAge      time.Duration
	SecureCookies      bool
}

// handler is the console.
type handler struct {
	opts  Options
	key   []byte
	pages map[string]*template.Template
	mux   *http.ServeMux
}

// New returns the console handler. It serves from the root of whatever it
// is mounted on; mount it under a prefix with http.StripPrefix and set
// Options.BasePath to the prefix.
func New(opts Options) (http.Handler, error) {
	switch {
	case opts.Store == nil:
		return nil, &agents.InvalidBindingsError{Reason: "console: Options.Store is nil"}
	case opts.Authenticate == nil:
		return nil, &agents.InvalidBindingsError{Reason: "console: Options.Authenticate is nil"}
	case opts.SessionIdleTimeout < 0 || opts.SessionMaxAge < 0:
		return nil, &agents.InvalidBindingsError{Reason: "console: a session timeout is negative"}
	case len(opts.CSRFKey) > 0 && len(opts.CSRFKey) < 32:
		return nil, &agents.InvalidBindingsError{Reason: "console: Options.CSRFKey is shorter than 32 bytes"}
	}
	h := &handler{opts: opts, key: opts.CSRFKey}
	if len(h.key) == 0 {
		h.key = make([]byte, 32)
		if _, err := rand.Read(h.key); err != nil {
			return nil, err
		}
	}
	if h.opts.Now == nil {
		h.opts.Now = time.Now
	}
	if h.opts.RefreshSeconds == 0 {
		h.opts.RefreshSeconds = 5
	}
	h.opts.BasePath = strings.TrimRight(h.opts.BasePath, "/")
	if tl, ok := opts.Login.(*TokenLogin); ok {
		tl.mu.Lock()
		if opts.SessionIdleTimeout > 0 {
			tl.IdleTimeout = opts.SessionIdleTimeout
		}
		if opts.SessionMaxAge > 0 {
			tl.MaxAge = opts.SessionMaxAge
		}
		tl.Secure = tl.Secure || opts.SecureCookies
		if tl.Base == "" {
			tl.Base = h.opts.BasePath
		}
		tl.mu.Unlock()
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	h.pages = pages
	assets, _ := fs.Sub(files, "assets")
	mux := http.NewServeMux()
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(assets)))
	if h.opts.Login != nil {
		mux.Handle("/login", h.opts.Login)
	}
	mux.HandleFunc("POST /logout", h.auth(h.logout))
	mux.HandleFunc("GET /events", h.auth(h.events))
	mux.HandleFunc("GET /{$}", h.auth(h.approvals))
	mux.HandleFunc("POST /approvals/{tenant}/{id...}", h.auth(h.decide))
	mux.HandleFunc("GET /runs", h.auth(h.runs))
	mux.HandleFunc("GET /runs/{tenant}/{id...}", h.auth(h.run))
	mux.HandleFunc("GET /conversations", h.auth(h.conversations))
	mux.HandleFunc("GET /conversations/{tenant}/{id...}", h.auth(h.conversation))
	mux.HandleFunc("GET /quotas", h.auth(h.quotas))
	mux.HandleFunc("/", h.notFoundPage)
	h.mux = mux
	return h, nil
}

// csp allows only the console's own script, style and requests.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cache-Control", "no-store")
	h.mux.ServeHTTP(w, r)
}

type reviewerKey struct{}

// auth authenticates the request, and for a POST checks its CSRF token.
func (h *handler) auth(next func(http.ResponseWriter, *http.Request, Reviewer)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rv, err := h.opts.Authenticate(r)
		if err != nil || rv.ID == "" {
			if r.Method == http.MethodGet && h.opts.Login != nil {
				http.Redirect(w, r, h.opts.BasePath+"/login", http.StatusSeeOther)
				return
			}
			http.Error(w, "not signed in", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
			if err := r.ParseForm(); err != nil {
				http.Error(w, "bad form", http.StatusBadRequest)
				return
			}
			if !h.checkCSRF(rv, r.PostForm.Get("csrf")) {
				http.Error(w, "missing or invalid CSRF token", http.StatusForbidden)
				return
			}
		}
		next(w, r, rv)
	}
}

// csrf is the reviewer's CSRF token: an HMAC of who they are and of
// their session.
func (h *handler) csrf(rv Reviewer) string {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte("kindgi-console-csrf\x00" + rv.Session + "\x00" + rv.ID + "\x00" + rv.Role + "\x00" + strings.Join(rv.TenantIDs, "\x00")))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (h *handler) checkCSRF(rv Reviewer, token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(h.csrf(rv))) == 1
}

// allowed reports whether the reviewer may see tenant.
func allowed(rv Reviewer, tenant string) bool {
	return tenant != "" && slices.Contains(rv.TenantIDs, tenant)
}

// roleRank places a role on the reviewer ladder; 0 is off it.
func roleRank(role string) int {
	switch role {
	case "standard":
		return 1
	case "senior":
		return 2
	case "admin":
		return 3
	}
	return 0
}

// MayDecide reports whether a reviewer with role may decide an approval
// that requires required: both on the ladder standard < senior < admin
// with role at least as senior, or the very same role (an empty required
// role, and an empty reviewer role, is standard). A role off the ladder decides only approvals asking
// for it, and an approval asking for a role off the ladder is decided
// only by that role.
func MayDecide(role, required string) bool {
	if required == "" {
		required = "standard"
	}
	if role == "" {
		role = "standard" // a reviewer with no role is a standard reviewer
	}
	if role == required {
		return true
	}
	rr, qr := roleRank(role), roleRank(required)
	return rr > 0 && qr > 0 && rr >= qr
}

// logout ends the session (Options.Logout) and sends the reviewer to the
// login form, or to the approvals page without a login form.
func (h *handler) logout(w http.ResponseWriter, r *http.Request, _ Reviewer) {
	if h.opts.Logout != nil {
		h.opts.Logout(w, r)
	}
	to := h.opts.BasePath + "/"
	if h.opts.Login != nil {
		to = h.opts.BasePath + "/login"
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}
