package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// subcommand checks the first argument of a command with subcommands
// (kindgi runs, approvals, quotas): ok when it is one of subs. Otherwise
// it answers -h and --help with the usage on stdout (exit 0), and anything
// else with what was wrong on its own line, a blank line, then the usage
// on stderr (exit 2).
func subcommand(cmd string, subs []string, usage string, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) > 0 && slices.Contains(subs, args[0]) {
		return 0, true
	}
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintf(stdout, "usage: kindgi %s\n", usage)
		return exitOK, false
	}
	want := strings.Join(subs, ", ")
	if len(args) == 0 {
		fmt.Fprintf(stderr, "kindgi %s: give a command: %s\n\n", cmd, want)
	} else {
		fmt.Fprintf(stderr, "kindgi %s: unknown command %q (want %s)\n\n", cmd, args[0], want)
	}
	fmt.Fprintf(stderr, "usage: kindgi %s\n", usage)
	return exitUsage, false
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@=,+%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// storeArgs are the flags that name a command's store and tenant, as a
// complete command needs them: --database-url only when
// KINDGI_DATABASE_URL does not already name url.
func storeArgs(url, tenant string) string {
	var b strings.Builder
	if os.Getenv("KINDGI_DATABASE_URL") != url {
		b.WriteString(" --database-url " + shellQuote(url))
	}
	b.WriteString(" --tenant " + shellQuote(tenant))
	return b.String()
}
