package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Cookie names of TokenLogin.
const (
	sessionCookie = "kindgi_console_session"
	loginCookie   = "kindgi_console_login"
)

// Defaults of TokenLogin.
const (
	// DefaultIdleTimeout ends a session nobody used for this long.
	DefaultIdleTimeout = 12 * time.Hour
	// DefaultMaxSessionAge ends a session this long after its login,
	// however busy.
	DefaultMaxSessionAge = 7 * 24 * time.Hour
	// DefaultLoginBurst login attempts are allowed from one client
	// address at once, then one every DefaultLoginInterval.
	DefaultLoginBurst    = 5
	DefaultLoginInterval = 12 * time.Second
	// maxSessions bounds the live sessions kept: the oldest is ended to
	// make room for a new login.
	maxSessions = 10000
	// maxLimiters bounds the client addresses whose login attempts are
	// tracked; idle ones are forgotten first.
	maxLimiters = 10000
)

// TokenLogin authenticates everyone who knows one shared token as one
// Reviewer, with sessions kept on the server as a bank's are: a login form
// (ServeHTTP, mounted as Options.Login) checks the token and starts a
// session under a random id, set as an HttpOnly, SameSite=Strict cookie
// (Secure when the request came over TLS or Secure is set); Authenticate
// accepts the cookie while the session lives. A session ends after
// IdleTimeout without a request, MaxAge after its login, or at Logout
// (Options.Logout, POST /logout). Each session has its own CSRF token
// (Reviewer.Session keys it), so a login rotates it. Login attempts are
// limited per client address (429 with Retry-After beyond the limit). The
// form itself is CSRF-protected by a double-submit cookie. `kindgi
// console` uses it for KINDGI_CONSOLE_TOKEN.
//
// Set the exported fields before serving; they are not to be changed
// while requests are served.
type TokenLogin struct {
	token    [sha256.Size]byte
	reviewer Reviewer
	// Secure marks the cookies Secure for every request (set it behind a
	// TLS-terminating proxy); a request that arrived over TLS gets Secure
	// cookies anyway.
	Secure bool
	// Base is the console's Options.BasePath: the form posts and the
	// login lands under it.
	Base string
	// IdleTimeout ends a session unused for this long (0 is
	// DefaultIdleTimeout).
	IdleTimeout time.Duration
	// MaxAge ends a session this long after its login (0 is
	// DefaultMaxSessionAge).
	MaxAge time.Duration
	// LoginBurst and LoginInterval limit login attempts per client
	// address: LoginBurst at once, then one per LoginInterval (0 is
	// DefaultLoginBurst, DefaultLoginInterval).
	LoginBurst    int
	LoginInterval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time

	mu       sync.Mutex
	sessions map[string]*session
	limiters map[string]*limiter
}

// session is one signed-in browser.
type session struct {
	created, seen time.Time
}

// limiter is one client address's login attempts.
type limiter struct {
	lim  *rate.Limiter
	seen time.Time
}

// NewTokenLogin returns a TokenLogin for token (at least 16 bytes) that
// signs reviewer in. A reviewer with no TenantIDs sees nothing until the
// host fills them in (kindgi console wraps Authenticate to do so).
func NewTokenLogin(token string, reviewer Reviewer) (*TokenLogin, error) {
	if len(token) < 16 {
		return nil, errors.New("console: the login token must be at least 16 bytes")
	}
	if reviewer.ID == "" {
		return nil, errors.New("console: the token's reviewer needs an id")
	}
	return &TokenLogin{token: sha256.Sum256([]byte(token)), reviewer: reviewer,
		sessions: map[string]*session{}, limiters: map[string]*limiter{}}, nil
}

func (l *TokenLogin) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func orDefault[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// Authenticate is an Options.Authenticate: the reviewer, with the session
// as Reviewer.Session, when the request carries the cookie of a live
// session (its idle time then starts again).
func (l *TokenLogin) Authenticate(r *http.Request) (Reviewer, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return Reviewer{}, errors.New("console: not signed in")
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.sessions[c.Value]
	if s == nil {
		return Reviewer{}, errors.New("console: not signed in")
	}
	if now.Sub(s.seen) >= orDefault(l.IdleTimeout, DefaultIdleTimeout) || now.Sub(s.created) >= orDefault(l.MaxAge, DefaultMaxSessionAge) {
		delete(l.sessions, c.Value)
		return Reviewer{}, errors.New("console: the session expired")
	}
	s.seen = now
	rv := l.reviewer
	rv.Session = c.Value
	return rv, nil
}

// Logout ends the request's session on the server and clears its cookie.
// The console calls it for POST /logout (Options.Logout) after checking
// the CSRF token.
func (l *TokenLogin) Logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		l.mu.Lock()
		delete(l.sessions, c.Value)
		l.mu.Unlock()
	}
	l.setCookie(w, r, sessionCookie, "", -1)
}

// Sessions reports how many sessions are live (not yet found expired).
func (l *TokenLogin) Sessions() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sessions)
}

// ServeHTTP serves the login form (GET) and checks it (POST).
func (l *TokenLogin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		l.form(w, r, http.StatusOK, "")
	case http.MethodPost:
		if wait, ok := l.allow(r); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			http.Error(w, "too many sign-in attempts from your address: wait and try again", http.StatusTooManyRequests)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		c, err := r.Cookie(loginCookie)
		if err != nil || c.Value == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(r.PostForm.Get("csrf"))) != 1 {
			http.Error(w, "missing or invalid CSRF token: load the login page again", http.StatusForbidden)
			return
		}
		got := sha256.Sum256([]byte(r.PostForm.Get("token")))
		if subtle.ConstantTimeCompare(got[:], l.token[:]) != 1 {
			l.form(w, r, http.StatusUnauthorized, "That token is not the console's token.")
			return
		}
		if old, err := r.Cookie(sessionCookie); err == nil {
			// A login starts a new session (and CSRF token): the old
			// one, if any, ends.
			l.mu.Lock()
			delete(l.sessions, old.Value)
			l.mu.Unlock()
		}
		id := l.start()
		l.setCookie(w, r, sessionCookie, id, 0)
		l.setCookie(w, r, loginCookie, "", -1)
		http.Redirect(w, r, l.Base+"/", http.StatusSeeOther)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// start begins a session, ending the oldest when maxSessions are live.
func (l *TokenLogin) start() string {
	id := randomID()
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.sessions) >= maxSessions {
		l.sweepSessions(now)
	}
	l.sessions[id] = &session{created: now, seen: now}
	return id
}

// sweepSessions drops expired sessions, and the oldest one if none was.
func (l *TokenLogin) sweepSessions(now time.Time) {
	idle, maxAge := orDefault(l.IdleTimeout, DefaultIdleTimeout), orDefault(l.MaxAge, DefaultMaxSessionAge)
	var oldest string
	for id, s := range l.sessions {
		if now.Sub(s.seen) >= idle || now.Sub(s.created) >= maxAge {
			delete(l.sessions, id)
		} else if oldest == "" || s.created.Before(l.sessions[oldest].created) {
			oldest = id
		}
	}
	if len(l.sessions) >= maxSessions {
		delete(l.sessions, oldest)
	}
}

// allow takes one login attempt of the request's client address, or says
// how long to wait for one.
func (l *TokenLogin) allow(r *http.Request) (time.Duration, bool) {
	addr, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		addr = r.RemoteAddr
	}
	now := l.now()
	interval := orDefault(l.LoginInterval, DefaultLoginInterval)
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.limiters[addr]
	if e == nil {
		if len(l.limiters) >= maxLimiters {
			l.sweepLimiters(now)
		}
		e = &limiter{lim: rate.NewLimiter(rate.Every(interval), orDefault(l.LoginBurst, DefaultLoginBurst))}
		l.limiters[addr] = e
	}
	e.seen = now
	res := e.lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d, false
	}
	return 0, true
}

// sweepLimiters forgets the addresses whose limiter is full again (they
// would start afresh anyway), and the least recently seen if none is.
func (l *TokenLogin) sweepLimiters(now time.Time) {
	var oldest string
	for a, e := range l.limiters {
		if e.lim.TokensAt(now) >= float64(e.lim.Burst()) {
			delete(l.limiters, a)
		} else if oldest == "" || e.seen.Before(l.limiters[oldest].seen) {
			oldest = a
		}
	}
	if len(l.limiters) >= maxLimiters {
		delete(l.limiters, oldest)
	}
}

// setCookie sets an HttpOnly, SameSite=Strict cookie, Secure over TLS or
// with l.Secure.
func (l *TokenLogin) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		Secure: l.Secure || r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

func randomID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (l *TokenLogin) form(w http.ResponseWriter, r *http.Request, status int, msg string) {
	// The form's token lives as long as its cookie: a second form in
	// another tab (or a reload) keeps the first one valid.
	token := ""
	if c, err := r.Cookie(loginCookie); err == nil && len(c.Value) == 43 {
		token = c.Value
	} else {
		token = randomID()
	}
	l.setCookie(w, r, loginCookie, token, 0)
	loginPage.render(w, r, status, "login", page{Base: l.Base, Title: "Sign in", CSRF: token, Refresh: -1,
		Data: struct{ Error string }{msg}})
}

// loginPage renders the login form (templates parsed once).
var loginPage = func() *handler {
	pages, err := parsePages()
	if err != nil {
		panic(err)
	}
	return &handler{pages: pages, opts: Options{RefreshSeconds: -1}}
}()
