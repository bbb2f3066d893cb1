package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
)

// Cookie names of TokenLogin.
const (
	sessionCookie = "kindgi_console_session"
	loginCookie   = "kindgi_console_login"
)

// TokenLogin authenticates everyone who knows one shared token as one
// Reviewer: a login form (ServeHTTP, mounted as Options.Login) checks the
// token and sets an HttpOnly, SameSite=Strict session cookie holding an
// HMAC of the token (never the token itself), which Authenticate checks.
// The form is CSRF-protected by a double-submit cookie. `kindgi console`
// uses it for KINDGI_CONSOLE_TOKEN.
type TokenLogin struct {
	token    []byte
	session  string
	reviewer Reviewer
	// Secure marks the cookies Secure (set it when served over HTTPS).
	Secure bool
	// Base is the console's Options.BasePath: the form posts and the
	// login lands under it.
	Base string
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
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("kindgi-console-session"))
	return &TokenLogin{token: []byte(token), session: base64.RawURLEncoding.EncodeToString(m.Sum(nil)), reviewer: reviewer}, nil
}

// Authenticate is an Options.Authenticate: the reviewer, when the request
// carries the session cookie.
func (l *TokenLogin) Authenticate(r *http.Request) (Reviewer, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(l.session)) != 1 {
		return Reviewer{}, errors.New("console: not signed in")
	}
	return l.reviewer, nil
}

// ServeHTTP serves the login form (GET) and checks it (POST).
func (l *TokenLogin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		l.form(w, r, http.StatusOK, "")
	case http.MethodPost:
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
		if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("token")), l.token) != 1 {
			l.form(w, r, http.StatusUnauthorized, "That token is not the console's token.")
			return
		}
		http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: l.session, Path: "/", HttpOnly: true, Secure: l.Secure, SameSite: http.SameSiteStrictMode})
		http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: l.Secure, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, l.Base+"/", http.StatusSeeOther)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (l *TokenLogin) form(w http.ResponseWriter, r *http.Request, status int, msg string) {
	nonce := make([]byte, 18)
	_, _ = rand.Read(nonce)
	token := base64.RawURLEncoding.EncodeToString(nonce)
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: token, Path: "/", HttpOnly: true, Secure: l.Secure, SameSite: http.SameSiteStrictMode})
	loginPage.render(w, status, "login", page{Base: l.Base, Title: "Sign in", CSRF: token, Refresh: -1,
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
