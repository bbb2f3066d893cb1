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
	fs := newFlags("validate", "validate [--json] FILE...\n\nChecks agent files (JSON or YAML) and prints every issue as FILE: PATH: MESSAGE.\nExits 1 when any file is invalid.", stderr)
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
	for _, f := range files {
		_, err := agent.Load(f)
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
		for _, is := range issues {
			path := is.Path
			if path == "" {
				path = "(file)"
			}
			fmt.Fprintf(stdout, "%s: %s: %s\n", is.File, path, is.Message)
		}
	}
	if len(issues) > 0 {
		return exitFailure
	}
	return exitOK
}
