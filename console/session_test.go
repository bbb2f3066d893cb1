package console_test

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kindgi/agents/console"
	"github.com/kindgi/agents/memstore"
)

const sessionToken = "0123456789abcdef-secret"

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// browserish is a cookie-keeping client of a console handler, without a
// network: each request goes through h.ServeHTTP from addr.
type browserish struct {
	t       *testing.T
	h       http.Handler
	addr    string
	tls     bool
	cookies map[string]*http.Cookie
	last    *httptest.ResponseRecorder
}

func newBrowserish(t *testing.T, h http.Handler, addr string) *browserish {
	return &browserish{t: t, h: h, addr: addr, cookies: map[string]*http.Cookie{}}
}

func (b *browserish) do(method, path string, form url.Values) *httptest.ResponseRecorder {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, path, body)
	req.RemoteAddr = b.addr
	if b.tls {
		req.TLS = &tls.ConnectionState{}
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, c := range b.cookies {
		req.AddCookie(c)
	}
	w := httptest.NewRecorder()
	b.h.ServeHTTP(w, req)
	for _, c := range w.Result().Cookies() {
		if c.MaxAge < 0 {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c
		}
	}
	b.last = w
	return w
}

// login signs b in with token and returns the response of the POST.
func (b *browserish) login(token string) *httptest.ResponseRecorder {
	page := b.do("GET", "/login", nil)
	return b.do("POST", "/login", url.Values{"token": {token}, "csrf": {csrfOf(b.t, page.Body.String())}})
}

// mustLogin signs b in with sessionToken and fails the test unless the
// login redirects (303).
func (b *browserish) mustLogin() {
	b.t.Helper()
	if w := b.login(sessionToken); w.Code != http.StatusSeeOther {
		b.t.Fatalf("login = %d", w.Code)
	}
}

// signedIn is a session console with a browser at 198.51.100.2 signed in to
// it.
func signedIn(t *testing.T, opts console.Options) (*browserish, *console.TokenLogin, *clock) {
	t.Helper()
	h, login, c := sessionConsole(t, opts)
	b := newBrowserish(t, h, "198.51.100.2:4000")
	b.mustLogin()
	return b, login, c
}

func sessionConsole(t *testing.T, opts console.Options) (http.Handler, *console.TokenLogin, *clock) {
	t.Helper()
	s := memstore.New(nil)
	park(t, s, "acme", "run-1", "standard")
	login, err := console.NewTokenLogin(sessionToken, console.Reviewer{ID: "ops", Role: "admin", TenantIDs: []string{"acme"}})
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	login.Now = c.Now
	opts.Store, opts.Authenticate, opts.Login, opts.Logout, opts.RefreshSeconds = s, login.Authenticate, login, login.Logout, -1
	h, err := console.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h, login, c
}

// TestLoginAttemptsAreRateLimitedPerAddress: beyond the burst, a client
// address is answered 429 with a Retry-After, even with the right token;
// another address is not; after the wait the address may try again.
func TestLoginAttemptsAreRateLimitedPerAddress(t *testing.T) {
	h, _, c := sessionConsole(t, console.Options{})
	mallory := newBrowserish(t, h, "203.0.113.7:5000")
	for i := range console.DefaultLoginBurst {
		if w := mallory.login("wrong-token-wrong-token"); w.Code != http.StatusUnauthorized {
			t.Fatalf("attempt %d = %d, want 401", i+1, w.Code)
		}
	}
	w := mallory.login(sessionToken)
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("attempt past the burst = %d, want 429", w.Code)
	}
	if ra := w.Header().Get("Retry-After"); ra != "12" {
		t.Errorf("Retry-After = %q, want 12 (one attempt per %v)", ra, console.DefaultLoginInterval)
	}
	if _, ok := mallory.cookies["kindgi_console_session"]; ok {
		t.Error("a refused attempt signed in")
	}
	// Another port of the same address is the same client.
	mallory.addr = "203.0.113.7:5001"
	if w := mallory.login(sessionToken); w.Code != http.StatusTooManyRequests {
		t.Errorf("the same address from another port = %d, want 429", w.Code)
	}
	alice := newBrowserish(t, h, "198.51.100.2:4000")
	if w := alice.login(sessionToken); w.Code != http.StatusSeeOther {
		t.Errorf("another address's login = %d, want 303", w.Code)
	}
	c.Add(console.DefaultLoginInterval)
	if w := mallory.login(sessionToken); w.Code != http.StatusSeeOther {
		t.Errorf("after Retry-After the login = %d, want 303", w.Code)
	}
}

// TestSessionsExpireWhenIdleAndAtTheirAge: a session lives while used
// within the idle timeout, ends after it unused, and ends at its maximum
// age however busy.
func TestSessionsExpireWhenIdleAndAtTheirAge(t *testing.T) {
	b, login, c := signedIn(t, console.Options{SessionIdleTimeout: time.Hour, SessionMaxAge: 3 * time.Hour})
	for range 5 { // 2.5 hours, never idle for an hour
		c.Add(30 * time.Minute)
		if w := b.do("GET", "/runs", nil); w.Code != http.StatusOK {
			t.Fatalf("GET /runs within the idle timeout = %d, want 200", w.Code)
		}
	}
	c.Add(31 * time.Minute) // 3h01m after the login
	if w := b.do("GET", "/runs", nil); w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/login" {
		t.Errorf("GET /runs past the session's maximum age = %d %q, want the login form", w.Code, w.Header().Get("Location"))
	}
	if n := login.Sessions(); n != 0 {
		t.Errorf("%d sessions live after expiry, want 0", n)
	}

	b.mustLogin()
	c.Add(time.Hour)
	if w := b.do("GET", "/runs", nil); w.Code != http.StatusSeeOther {
		t.Errorf("GET /runs after an hour idle = %d, want a redirect to the login form", w.Code)
	}
}

// TestDefaultIdleTimeoutIsTwelveHours: without options a session outlives
// 11h59m idle but not 12h.
func TestDefaultIdleTimeoutIsTwelveHours(t *testing.T) {
	b, _, c := signedIn(t, console.Options{})
	c.Add(12*time.Hour - time.Minute)
	if w := b.do("GET", "/", nil); w.Code != http.StatusOK {
		t.Fatalf("after 11h59m idle = %d, want 200", w.Code)
	}
	c.Add(12 * time.Hour)
	if w := b.do("GET", "/", nil); w.Code != http.StatusSeeOther {
		t.Errorf("after 12h idle = %d, want the login form", w.Code)
	}
}

// TestLogoutEndsTheSessionOnTheServer: POST /logout needs the page's CSRF
// token, and after it the old session cookie no longer signs anyone in,
// even replayed.
func TestLogoutEndsTheSessionOnTheServer(t *testing.T) {
	b, login, _ := signedIn(t, console.Options{})
	page := b.do("GET", "/", nil)
	if !strings.Contains(page.Body.String(), `action="/logout"`) {
		t.Fatalf("no sign-out form on the page:\n%s", page.Body.String())
	}
	old := *b.cookies["kindgi_console_session"]
	if w := b.do("POST", "/logout", url.Values{"csrf": {"forged"}}); w.Code != http.StatusForbidden {
		t.Errorf("logout with a forged CSRF token = %d, want 403", w.Code)
	}
	if login.Sessions() != 1 {
		t.Fatal("a refused logout ended the session")
	}
	if w := b.do("POST", "/logout", url.Values{"csrf": {csrfOf(t, page.Body.String())}}); w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/login" {
		t.Errorf("logout = %d %q, want a redirect to /login", w.Code, w.Header().Get("Location"))
	}
	if _, ok := b.cookies["kindgi_console_session"]; ok {
		t.Error("the session cookie was not cleared")
	}
	b.cookies[old.Name] = &old // replayed
	if w := b.do("GET", "/", nil); w.Code != http.StatusSeeOther {
		t.Errorf("the old session cookie after logout = %d, want the login form", w.Code)
	}
	if login.Sessions() != 0 {
		t.Errorf("%d sessions after logout", login.Sessions())
	}
}

// TestCookiesAreSecureOverTLSOrWhenAsked: without TLS and the option the
// cookies are not Secure (a plain-HTTP console on localhost must work);
// over TLS, or with SecureCookies, every cookie is.
func TestCookiesAreSecureOverTLSOrWhenAsked(t *testing.T) {
	secure := func(w *httptest.ResponseRecorder) (n, of int) {
		for _, c := range w.Result().Cookies() {
			of++
			if c.Secure {
				n++
			}
		}
		return n, of
	}
	for _, tc := range []struct {
		name     string
		tls, opt bool
		want     bool
	}{{"plain", false, false, false}, {"tls", true, false, true}, {"option", false, true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			h, _, _ := sessionConsole(t, console.Options{SecureCookies: tc.opt})
			b := newBrowserish(t, h, "198.51.100.2:4000")
			b.tls = tc.tls
			page := b.do("GET", "/login", nil)
			w := b.do("POST", "/login", url.Values{"token": {sessionToken}, "csrf": {csrfOf(t, page.Body.String())}})
			for _, r := range []*httptest.ResponseRecorder{page, w} {
				n, of := secure(r)
				if of == 0 || (n == of) != tc.want || (n == 0) == tc.want {
					t.Errorf("%d of %d cookies Secure, want all %v", n, of, tc.want)
				}
			}
		})
	}
}

// TestCSRFTokenIsPerSessionAndRotatesAtLogin: two sessions of the same
// reviewer have different CSRF tokens, a new login gets a new one, and a
// token of another session (or of the session before the login) is
// refused.
func TestCSRFTokenIsPerSessionAndRotatesAtLogin(t *testing.T) {
	h, _, _ := sessionConsole(t, console.Options{})
	a := newBrowserish(t, h, "198.51.100.2:4000")
	a.login(sessionToken)
	tokA := csrfOf(t, a.do("GET", "/", nil).Body.String())
	b := newBrowserish(t, h, "198.51.100.3:4000")
	b.login(sessionToken)
	tokB := csrfOf(t, b.do("GET", "/", nil).Body.String())
	if tokA == tokB {
		t.Fatal("two sessions share a CSRF token")
	}
	decide := func(c *browserish, tok string) int {
		return c.do("POST", "/approvals/acme/ap-run-1", url.Values{"csrf": {tok}, "decision": {"deny"}, "reason": {"x"}}).Code
	}
	if code := decide(b, tokA); code != http.StatusForbidden {
		t.Errorf("a decision with another session's CSRF token = %d, want 403", code)
	}
	a.login(sessionToken) // a new login from the same browser
	tokA2 := csrfOf(t, a.do("GET", "/", nil).Body.String())
	if tokA2 == tokA {
		t.Fatal("the CSRF token did not rotate at login")
	}
	if code := decide(a, tokA); code != http.StatusForbidden {
		t.Errorf("a decision with the token of before the login = %d, want 403", code)
	}
	if code := decide(a, tokA2); code != http.StatusSeeOther {
		t.Errorf("a decision with the session's token = %d, want 303", code)
	}
}
