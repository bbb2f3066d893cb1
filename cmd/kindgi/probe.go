package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kindgi/agents/pack/packtest"
)

func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("pack probe", "pack probe --url URL --token TOKEN [--timeout 30s]\n\nRuns the pack protocol conformance checks against a running pack service and\nprints one line per check: PASS or FAIL, its name, and why it failed. Exits 1\non any failure.", stderr)
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
