package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestConsoleSessionFlags serves `kindgi console` with --secure-cookies
// and a three-second --idle-timeout: its cookies are Secure on plain HTTP,
// the session signs in, and it ends after three seconds unused; a non-positive
// timeout is a usage error.
func TestConsoleSessionFlags(t *testing.T) {
	if r := kindgi(t, "console", "--database-url", "postgres://127.0.0.1:1/x", "--trusted-header", "X-User", "--idle-timeout", "0s"); r.code != exitUsage || !strings.Contains(r.stderr, "must be positive") {
		t.Errorf("--idle-timeout 0s: exit %d, stderr %q; want usage", r.code, r.stderr)
	}
	dbURL := os.Getenv("KINDGI_TEST_DATABASE_URL")
	if dbURL == "" {
		t.Skip("KINDGI_TEST_DATABASE_URL is not set")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("KINDGI_CONSOLE_TOKEN", "0123456789abcdef-token")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- runConsole(ctx, []string{"--database-url", dbURL, "--listen", addr, "--tenant", "acme", "--idle-timeout", "3s", "--secure-cookies"}, io.Discard, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("kindgi console exit %d", code)
		}
	})
	base := "http://" + addr
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
	var page *http.Response
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if page, err = noRedirect.Get(base + "/login"); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(body)
	if csrf == nil || len(page.Cookies()) != 1 || !page.Cookies()[0].Secure {
		t.Fatalf("login form: cookies %v (want one, Secure)", page.Cookies())
	}
	req, _ := http.NewRequest("POST", base+"/login", strings.NewReader(url.Values{"token": {"0123456789abcdef-token"}, "csrf": {string(csrf[1])}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(page.Cookies()[0])
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "kindgi_console_session" {
			session = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || session == nil || !session.Secure {
		t.Fatalf("login = %d, session cookie %v; want a Secure one", resp.StatusCode, session)
	}
	get := func() int {
		req, _ := http.NewRequest("GET", base+"/runs", nil)
		req.AddCookie(&http.Cookie{Name: session.Name, Value: session.Value})
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != http.StatusOK {
		t.Fatalf("GET /runs signed in = %d", code)
	}
	time.Sleep(3100 * time.Millisecond) // past --idle-timeout
	if code := get(); code != http.StatusSeeOther {
		t.Errorf("GET /runs after the idle timeout = %d, want a redirect to the login form", code)
	}
}
