package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
)

// fileIssue is one line of `kindgi validate --json`.
type fileIssue struct {
	File    string `json:"file"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

func runValidate(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("validate", "validate [--json] FILE...\n\nChecks agent files (JSON or YAML) and prints every issue as FILE: PATH: MESSAGE,\nor FILE: ok for a valid file. Exits 1 when any file is invalid.", stderr)
	asJSON := fs.Bool("json", false, "print the issues as a JSON array of {file, path, message}")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "kindgi validate: no files given")
		fs.Usage()
		return exitUsage
	}
	issues := []fileIssue{}
	valid := make([]bool, len(files))
	for i, f := range files {
		_, err := agent.Load(f)
		valid[i] = err == nil
		var inv *agents.InvalidAgentError
		switch {
		case err == nil:
		case errors.As(err, &inv):
			for _, is := range inv.Issues {
				issues = append(issues, fileIssue{File: f, Path: is.Path, Message: is.Message})
			}
		default:
			issues = append(issues, fileIssue{File: f, Message: err.Error()})
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(issues); err != nil {
			fmt.Fprintln(stderr, "kindgi validate:", err)
			return exitFailure
		}
	} else {
		// In the order of the files: a valid one is "FILE: ok", an invalid
		// one is its issues.
		next := 0
		for i, f := range files {
			if valid[i] {
				fmt.Fprintf(stdout, "%s: ok\n", f)
				continue
			}
			for ; next < len(issues) && issues[next].File == f; next++ {
				is := issues[next]
				path := is.Path
				if path == "" {
					path = "(file)"
				}
				fmt.Fprintf(stdout, "%s: %s: %s\n", is.File, path, is.Message)
			}
		}
	}
	if len(issues) > 0 {
		return exitFailure
	}
	return exitOK
}
