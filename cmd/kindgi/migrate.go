package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/kindgi/agents/pgstore"
)

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("migrate", "migrate --database-url URL\n\nApplies pgstore's embedded migrations (idempotent; safe to run from several\nprocesses at once) and prints the schema version.", stderr)
	url := fs.String("database-url", os.Getenv("KINDGI_DATABASE_URL"), "PostgreSQL URL (default $KINDGI_DATABASE_URL)")
	rest, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if *url == "" || len(rest) > 0 {
		fmt.Fprintln(stderr, "kindgi migrate: --database-url (or KINDGI_DATABASE_URL) is required")
		fs.Usage()
		return exitUsage
	}
	store, err := pgstore.Open(ctx, *url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "kindgi migrate: %s\n", errLine(err))
		return exitFailure
	}
	defer store.Close()
	if err := pgstore.Migrate(ctx, store.DB()); err != nil {
		fmt.Fprintf(stderr, "kindgi migrate: %s\n", errLine(err))
		return exitFailure
	}
	var version int64
	row := store.DB().QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+pgstore.VersionTable)
	if err := row.Scan(&version); err != nil {
		fmt.Fprintf(stderr, "kindgi migrate: reading the schema version: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "schema version %d\n", version)
	return exitOK
}
