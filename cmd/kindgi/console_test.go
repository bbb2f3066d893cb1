package main

import (
	"strings"
	"testing"
)

func TestConsoleRefusesBothOrNoAuthentication(t *testing.T) {
	t.Setenv("KINDGI_CONSOLE_TOKEN", "0123456789abcdef-token")
	r := kindgi(t, "console", "--database-url", "postgres://127.0.0.1:1/x", "--tenant", "acme", "--trusted-header", "X-User")
	if r.code != exitUsage || !strings.Contains(r.stderr, "choose one") {
		t.Errorf("token and header: exit %d, stderr %q; want usage, choose one", r.code, r.stderr)
	}
	t.Setenv("KINDGI_CONSOLE_TOKEN", "")
	r = kindgi(t, "console", "--database-url", "postgres://127.0.0.1:1/x", "--tenant", "acme")
	if r.code != exitUsage || !strings.Contains(r.stderr, "KINDGI_CONSOLE_TOKEN or pass --trusted-header") {
		t.Errorf("neither: exit %d, stderr %q; want usage", r.code, r.stderr)
	}
	t.Setenv("KINDGI_CONSOLE_TOKEN", "0123456789abcdef-token")
	r = kindgi(t, "console", "--database-url", "postgres://127.0.0.1:1/x")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--tenant") {
		t.Errorf("no tenant: exit %d, stderr %q; want usage", r.code, r.stderr)
	}
}
