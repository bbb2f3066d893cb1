package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

const pruneUsage = `prune --database-url URL --tenant ID [--older-than DURATION] [--json]

Deletes one tenant's runs that nobody will drive again, last updated more
than DURATION ago (default 720h, 30 days), with their journals, snapshots
and approvals: finished runs (completed or failed), and parked runs whose
approvals all expired and were moved to their timeout outcome. It never
deletes a running run, a run held by a live lease, or a parked run still
waiting on an approval. Conversations and their messages are kept. Deletes
run in batches, each its own transaction; running prune from several
processes at once is safe. Prints the counts of what it deleted. It applies
no migrations: run kindgi migrate first.

Moving expired parked runs to their timeout outcome (turn.ExpireApprovals)
needs the agents, model providers and tools, so it runs in the turn workers,
not here: prune deletes only runs whose outcome is settled.`

func runPrune(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("prune", pruneUsage, stderr)
	url := fs.String("database-url", os.Getenv("KINDGI_DATABASE_URL"), "PostgreSQL URL (default $KINDGI_DATABASE_URL)")
	tenant := fs.String("tenant", "", "the tenant whose runs to prune (required)")
	olderThan := fs.Duration("older-than", 720*time.Hour, "prune runs last updated longer ago than this")
	asJSON := fs.Bool("json", false, "print the counts as JSON")
	rest, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	switch {
	case *url == "":
		fmt.Fprintln(stderr, "kindgi prune: --database-url (or KINDGI_DATABASE_URL) is required")
	case *tenant == "":
		fmt.Fprintln(stderr, "kindgi prune: --tenant is required")
	case *olderThan <= 0:
		fmt.Fprintln(stderr, "kindgi prune: --older-than must be a positive duration such as 720h")
	case len(rest) > 0:
		fmt.Fprintf(stderr, "kindgi prune: unexpected arguments %q\n", rest)
	default:
		return prune(ctx, *url, *tenant, *olderThan, *asJSON, stdout, stderr)
	}
	fs.Usage()
	return exitUsage
}

func prune(ctx context.Context, url, tenant string, olderThan time.Duration, asJSON bool, stdout, stderr io.Writer) int {
	// No migrations here: prune needs no schema rights (run kindgi migrate
	// first; the indexes of the baseline migration make the deletes cheap).
	store, closeFn, err := connect(ctx, url)
	if err != nil {
		fmt.Fprintf(stderr, "kindgi prune: %s\n", errLine(err))
		return exitFailure
	}
	defer closeFn()
	st, err := store.Prune(ctx, tenant, time.Now().Add(-olderThan))
	if err != nil {
		fmt.Fprintf(stderr, "kindgi prune: %s (deleted before the failure: %d runs)\n", errLine(err), st.Runs)
		return exitFailure
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		if err := enc.Encode(st); err != nil {
			fmt.Fprintf(stderr, "kindgi prune: %v\n", err)
			return exitFailure
		}
		return exitOK
	}
	fmt.Fprintf(stdout, "runs %d\njournal entries %d\nsnapshots %d\napprovals %d\n", st.Runs, st.JournalEntries, st.Snapshots, st.Approvals)
	return exitOK
}
