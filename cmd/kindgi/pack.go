package main

import (
	"context"
	"fmt"
	"io"
)

func runPack(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		w, code := stdout, exitOK
		if len(args) == 0 {
			w, code = stderr, exitUsage
		}
		fmt.Fprintln(w, "usage: kindgi pack probe --url URL --token TOKEN")
		fmt.Fprintln(w, "\nRuns the pack protocol conformance checks against a running pack service\nand prints a pass/fail line per check; exits 1 on any failure.")
		return code
	}
	if args[0] != "probe" {
		fmt.Fprintf(stderr, "kindgi pack: unknown subcommand %q (want probe)\n", args[0])
		return exitUsage
	}
	return runProbe(ctx, args[1:], stdout, stderr)
}
