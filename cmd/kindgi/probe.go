package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"strings"
	"time"

	"github.com/kindgi/agents/pack"
	"github.com/kindgi/agents/pack/packtest"
)

func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("pack probe", "pack probe --url URL --token TOKEN [--timeout 30s]\n\nRuns the pack protocol conformance checks against a running pack service and\nprints one line per check: PASS or FAIL, its name, and why it failed. Exits 1\non any failure. A service that cannot be reached or refuses the token is one\nline on stderr, and no check runs.", stderr)
	url := fs.String("url", "", "base URL of the pack service, e.g. http://127.0.0.1:8080 (required)")
	token := fs.String("token", "", "the service token, sent in kindgi-pack-token (required)")
	timeout := fs.Duration("timeout", 30*time.Second, "time limit of each check")
	rest, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if *url == "" || *token == "" || len(rest) > 0 {
		fmt.Fprintln(stderr, "kindgi pack probe: --url and --token are required, and nothing else")
		fs.Usage()
		return exitUsage
	}
	target := packtest.Target{BaseURL: strings.TrimRight(*url, "/"), Token: *token}
	// Every check needs a reachable service that takes the token: without
	// either, one line says so instead of a FAIL per check.
	pctx, cancel := context.WithTimeout(ctx, *timeout)
	err = preflight(pctx, target)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "kindgi pack probe: %v; no check was run\n", err)
		return exitFailure
	}
	failed := 0
	checks := packtest.ChecksFor(target)
	for _, c := range checks {
		cctx, cancel := context.WithTimeout(ctx, *timeout)
		err := c.Run(cctx, target)
		cancel()
		if err != nil {
			failed++
			fmt.Fprintf(stdout, "FAIL %s: %v\n", c.Name, err)
			continue
		}
		fmt.Fprintf(stdout, "PASS %s\n", c.Name)
	}
	fmt.Fprintf(stdout, "%d passed, %d failed\n", len(checks)-failed, failed)
	if failed > 0 {
		return exitFailure
	}
	return exitOK
}

// preflight asks GET /v1/info with the token once: it fails when the
// service cannot be reached or refuses the token (401 or 403). Any other
// answer, even a wrong one, is left to the checks to judge.
func preflight(ctx context.Context, t packtest.Target) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.BaseURL+pack.PathInfo, nil)
	if err != nil {
		return fmt.Errorf("bad --url %q: %v", t.BaseURL, err)
	}
	req.Header.Set(pack.HeaderToken, t.Token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		var uerr *neturl.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return fmt.Errorf("cannot connect to %s: %v", t.BaseURL, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
	res.Body.Close()
	if res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden {
		return fmt.Errorf("%s refused the token (GET %s answered %d)", t.BaseURL, pack.PathInfo, res.StatusCode)
	}
	return nil
}
