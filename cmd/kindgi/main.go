// Command kindgi checks and renders agent files, applies the PostgreSQL
// migrations, probes pack services, and lets operators look at runs and
// decide approvals without SQL.
//
//	kindgi validate [--json] FILE...
//	kindgi render FILE [--param name=value]... [--now RFC3339] [--conversation ID] [--turn N]
//	kindgi migrate --database-url URL
//	kindgi pack probe --url URL --token TOKEN
//	kindgi prune --database-url URL --tenant ID [--older-than 720h] [--json]
//	kindgi runs list --database-url URL --tenant ID [--status S] [--parent RUN_ID] [--json]
//	kindgi runs show --database-url URL --tenant ID RUN_ID
//	kindgi approvals list|approve|deny --database-url URL --tenant ID [--approver ID --reason TEXT] [APPROVAL_ID]
//	kindgi console --database-url URL --listen 127.0.0.1:8080 --tenant ID [--role ROLE] [--trusted-header NAME]
//	kindgi quotas show --database-url URL --tenant ID [--json]
//	kindgi eval --agent FILE (--dataset FILE | --from-runs --database-url URL --tenant ID (--runs ID,... | --since 24h --agent-id ID)) [--grader G]... [--junit FILE] [--html FILE]
//
// Install it from a clone of the repository (the module is not published
// yet) with
//
//	go install ./cmd/kindgi
//
// or run it in place with go run ./cmd/kindgi.
//
// Exit codes: 0 success; 1 the command ran and found a problem (an invalid
// file, a render error, a failed check, a database error); 2 the command
// line itself is wrong. Errors and diagnostics go to stderr; results to
// stdout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// errUsage marks a command-line mistake: the command prints its usage and
// exits 2.
var errUsage = errors.New("usage")

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"validate", "check agent files and print every issue", runValidate},
		{"render", "render an agent file's instructions", runRender},
		{"migrate", "apply pgstore's migrations to a PostgreSQL database", runMigrate},
		{"pack", "talk to a pack service (pack probe)", runPack},
		{"prune", "delete a tenant's finished and expired parked runs", runPrune},
		{"runs", "list a tenant's runs, show one with its journal", runRuns},
		{"approvals", "list pending approvals, approve or deny one", runApprovals},
		{"console", "serve the reviewer console: approvals, runs, conversations in a browser", runConsole},
		{"eval", "replay datasets or recorded runs against an agent version, grade and report", runEval},
		{"quotas", "show a tenant's quotas: use per window and when it frees", runQuotas},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		w := stdout
		code := exitOK
		if len(args) == 0 {
			w, code = stderr, exitUsage
		}
		printUsage(w)
		return code
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, &diagWriter{w: stderr})
		}
	}
	fmt.Fprintf(stderr, "kindgi: unknown command %q\n\n", args[0])
	printUsage(stderr)
	return exitUsage
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: kindgi COMMAND [flags] [args]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'kindgi COMMAND --help' for a command's flags.")
	fmt.Fprintln(w, "Exit codes: 0 success, 1 a problem was found or the command failed, 2 bad command line.")
}

// newFlags returns a FlagSet that reports errors instead of exiting, with a
// usage line.
func newFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		if d, ok := stderr.(*diagWriter); ok && d.wrote {
			// After the error that calls for it: a blank line keeps the
			// error on a line of its own, apart from the usage.
			fmt.Fprintln(stderr)
		}
		fmt.Fprintf(stderr, "usage: kindgi %s\n", usage)
		if hasFlags(fs) {
			fmt.Fprintln(stderr, "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// diagWriter is a command's stderr: it remembers whether anything was
// written, so that a usage printed after an error ("kindgi approvals
// approve: --approver is required", or the flag package's own) is set
// apart from it by a blank line, as the unknown-command error is.
type diagWriter struct {
	w     io.Writer
	wrote bool
}

func (d *diagWriter) Write(p []byte) (int, error) {
	d.wrote = d.wrote || len(p) > 0
	return d.w.Write(p)
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parseInterleaved parses flags that may come before, between or after
// positional arguments, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// flagExit turns a flag parsing error into an exit code: --help is success.
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}
