package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/console"
)

const consoleUsage = `console --database-url URL [--listen 127.0.0.1:8080] [--tenant ID...] [--role ROLE] [--reviewer ID] [--trusted-header NAME] [--idle-timeout 12h] [--session-max-age 168h] [--secure-cookies]

serves the reviewer console (package console) over PostgreSQL: pending
approvals to approve or deny, runs with their journals, conversations.
A worker (turn.Worker) continues a run once its approvals are decided.

Authentication is one of two, never both:
  - a token: set KINDGI_CONSOLE_TOKEN (16 bytes or more); the login form
    takes it and sets an HttpOnly, SameSite=Strict session cookie. Whoever
    signs in is the reviewer --reviewer (default "console"). A session
    ends after --idle-timeout unused, --session-max-age after its login,
    or at "Sign out"; sign-in attempts are limited per client address.
    Cookies are Secure over TLS, and always with --secure-cookies (set it
    behind a proxy that terminates TLS).
  - a proxy: --trusted-header NAME takes the reviewer id from that request
    header, which the proxy in front sets after its own sign-in (and strips
    from clients). Only use it behind such a proxy.
Either way the reviewer sees the tenants given with --tenant (repeatable)
and decides with the role --role (standard, senior, admin or another;
default standard). Without --tenant the reviewer sees every tenant the
database role can read (all of them for the tables' owner or a superuser;
none for a role under row-level security), looked up again every 30 s.
Run one console per reviewer group.`

// tenants is a repeatable --tenant flag.
type tenants []string

func (t *tenants) String() string     { return strings.Join(*t, ",") }
func (t *tenants) Set(s string) error { *t = append(*t, s); return nil }

func runConsole(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("console", consoleUsage, stderr)
	url := fs.String("database-url", os.Getenv("KINDGI_DATABASE_URL"), "PostgreSQL URL (default $KINDGI_DATABASE_URL)")
	listen := fs.String("listen", "127.0.0.1:8080", "address to serve on")
	var ts tenants
	fs.Var(&ts, "tenant", "a tenant the reviewer sees (repeatable; none: every tenant the database role reads)")
	role := fs.String("role", "standard", "the reviewer's role")
	reviewer := fs.String("reviewer", "console", "token mode: the reviewer id decisions record")
	header := fs.String("trusted-header", "", "take the reviewer id from this header set by a trusted proxy (instead of a token)")
	idle := fs.Duration("idle-timeout", console.DefaultIdleTimeout, "token mode: end a session unused for this long")
	maxAge := fs.Duration("session-max-age", console.DefaultMaxSessionAge, "token mode: end a session this long after its login")
	secure := fs.Bool("secure-cookies", false, "mark the console's cookies Secure on every request (behind a TLS-terminating proxy)")
	rest, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	token := os.Getenv("KINDGI_CONSOLE_TOKEN")
	switch {
	case len(rest) > 0:
		fmt.Fprintf(stderr, "kindgi console: unexpected arguments %q\n", rest)
	case *url == "":
		fmt.Fprintln(stderr, "kindgi console: --database-url (or KINDGI_DATABASE_URL) is required")
	case token != "" && *header != "":
		fmt.Fprintln(stderr, "kindgi console: KINDGI_CONSOLE_TOKEN and --trusted-header are both set: choose one")
	case token == "" && *header == "":
		fmt.Fprintln(stderr, "kindgi console: set KINDGI_CONSOLE_TOKEN or pass --trusted-header")
	case token != "" && len(token) < 16:
		fmt.Fprintln(stderr, "kindgi console: KINDGI_CONSOLE_TOKEN must be at least 16 bytes")
	case *idle <= 0 || *maxAge <= 0:
		fmt.Fprintln(stderr, "kindgi console: --idle-timeout and --session-max-age must be positive")
	default:
		sess := console.Options{SessionIdleTimeout: *idle, SessionMaxAge: *maxAge, SecureCookies: *secure}
		return serveConsole(ctx, *url, *listen, console.Reviewer{ID: *reviewer, Role: *role, TenantIDs: ts}, token, *header, sess, stdout, stderr)
	}
	fs.Usage()
	return exitUsage
}

// serveConsole serves the console until ctx ends or a signal; opts holds
// the session settings.
func serveConsole(ctx context.Context, url, listen string, rv console.Reviewer, token, header string, opts console.Options, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "kindgi console: %s\n", errLine(err))
		return exitFailure
	}
	store, closeFn, err := connect(ctx, url)
	if err != nil {
		return fail(err)
	}
	defer closeFn()
	opts.Store = store
	if token != "" {
		login, err := console.NewTokenLogin(token, rv)
		if err != nil {
			return fail(err)
		}
		opts.Authenticate, opts.Login, opts.Logout = login.Authenticate, login, login.Logout
	} else {
		opts.Authenticate = func(r *http.Request) (console.Reviewer, error) {
			id := strings.TrimSpace(r.Header.Get(header))
			if id == "" {
				return console.Reviewer{}, errors.New("no " + header + " header")
			}
			return console.Reviewer{ID: id, Role: rv.Role, TenantIDs: rv.TenantIDs}, nil
		}
	}
	if len(rv.TenantIDs) == 0 {
		auth, all := opts.Authenticate, &visibleTenants{db: store.DB()}
		opts.Authenticate = func(r *http.Request) (console.Reviewer, error) {
			who, err := auth(r)
			if err != nil {
				return who, err
			}
			who.TenantIDs, err = all.list(r.Context())
			return who, err
		}
	}
	h, err := console.New(opts)
	if err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fail(err)
	}
	// Requests' contexts end at shutdown, so that the pages' event streams
	// (which outlive WriteTimeout) end with it.
	base, endStreams := context.WithCancel(context.Background())
	defer endStreams()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return base }}
	srv.RegisterOnShutdown(endStreams)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	shown := strings.Join(rv.TenantIDs, ",")
	if shown == "" {
		shown = "every tenant the database role reads"
	}
	fmt.Fprintf(stdout, "kindgi console on http://%s/ (tenants %s, role %s)\n", ln.Addr(), shown, rv.Role)
	select {
	case err := <-done:
		return fail(err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	<-done
	return exitOK
}

// visibleTenants lists the tenants the database role can read, for a
// console started without --tenant, cached for visibleTenantsTTL.
type visibleTenants struct {
	db interface {
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	}
	mu     sync.Mutex
	at     time.Time
	cached []string
}

const visibleTenantsTTL = 30 * time.Second

func (v *visibleTenants) list(ctx context.Context) ([]string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.cached != nil && time.Since(v.at) < visibleTenantsTTL {
		return v.cached, nil
	}
	rows, err := v.db.Query(ctx, `SELECT tenant_id FROM agent_runs UNION SELECT tenant_id FROM agent_conversations
		UNION SELECT tenant_id FROM agent_approvals ORDER BY 1 LIMIT 1000`)
	if err != nil {
		return nil, &agents.PersistenceError{Op: "list tenants", Err: err}
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, &agents.PersistenceError{Op: "list tenants", Err: err}
	}
	if ids == nil {
		ids = []string{}
	}
	v.cached, v.at = ids, time.Now()
	return ids, nil
}
