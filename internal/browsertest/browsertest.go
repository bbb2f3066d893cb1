// Package browsertest drives Debian's headless Chromium from tests with
// chromedp: the console's browser tests and the eval report's.
package browsertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ChromiumPath is where Debian's chromium package installs the browser.
const ChromiumPath = "/usr/bin/chromium"

// RequireEnv, when set (as .ci/run sets it), makes a test without
// Chromium fail instead of skip.
const RequireEnv = "KINDGI_REQUIRE_CHROMIUM"

// stepTimeout bounds each Run or Value.
const stepTimeout = 30 * time.Second

// Start starts headless Chromium for the test and returns a context to
// drive its tab. Without Chromium the test skips, unless RequireEnv is
// set: then it fails. The browser is stopped when the test ends, and the
// test fails if a Chromium process of its profile outlives it.
func Start(t testing.TB) context.Context {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("%s is set but %s is missing: %v", RequireEnv, ChromiumPath, err)
		}
		t.Skipf("no %s (apt-get install chromium)", ChromiumPath)
	}
	profile := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumPath),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1100, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // waits for the browser process to exit
		if pids := processesUsing(profile); len(pids) > 0 {
			t.Errorf("chromium processes left behind: %v", pids)
		}
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// Run does steps in ctx's tab, failing the test on an error; each call is
// bounded to 30 s.
func Run(t testing.TB, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatal(err)
	}
}

// Value runs one action that returns a value, as Run does.
func Value[T any](t testing.TB, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// processesUsing lists the processes whose command line names dir.
func processesUsing(dir string) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), dir) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
