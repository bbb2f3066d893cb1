package agents_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeShowsTheTour holds the README's tour equal to Example_tour in
// example_test.go, which compiles and whose output is checked: the code a
// newcomer copies from the README is code that runs.
func TestReadmeShowsTheTour(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(src), "// tour:begin\n")
	tour, _, ok2 := strings.Cut(rest, "\n// tour:end")
	if !ok || !ok2 {
		t.Fatal("example_test.go has no tour:begin / tour:end markers")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```go\n"+strings.TrimSpace(tour)+"\n```") {
		t.Error("README.md does not show the tour of example_test.go verbatim in a ```go block; copy the code between the tour markers into it")
	}
}
