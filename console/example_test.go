package console_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/kindgi/agents/console"
	"github.com/kindgi/agents/memstore"
)

// Example mounts the console under /console/ in a host's own server, with
// the host's own authentication (here a header its proxy sets; a real host
// reads its session). With pgstore, pass the *pgstore.Store as Store.
func Example() {
	store := memstore.New(nil) // or a *pgstore.Store

	// console:begin
	h, err := console.New(console.Options{
		Store:    store,
		BasePath: "/console",
		Authenticate: func(r *http.Request) (console.Reviewer, error) {
			user := r.Header.Get("X-Authenticated-User") // set by the host's sign-in
			if user == "" {
				return console.Reviewer{}, errors.New("not signed in")
			}
			return console.Reviewer{ID: user, Role: "senior", TenantIDs: []string{"acme"}}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console/", http.StripPrefix("/console", h))
	// … the host's own routes, then http.ListenAndServe(addr, mux)
	// console:end

	srv := httptest.NewServer(mux)
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/console/", nil)
	req.Header.Set("X-Authenticated-User", "alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.Contains(string(body), "Nothing waits for you"), strings.Contains(string(body), `href="/console/runs"`))
	// Output: 200 true true
}

// TestReadmeShowsTheMount holds the README's mounting snippet equal to the
// code between the console markers above, which compiles and runs.
func TestReadmeShowsTheMount(t *testing.T) {
	_, rest, _ := strings.Cut(readFile(t, "example_test.go"), "// console:begin\n")
	snip, _, ok := strings.Cut(rest, "\n\t// console:end")
	if !ok {
		t.Fatal("no console markers")
	}
	lines := strings.Split(snip, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "\t")
	}
	if !strings.Contains(readFile(t, "../README.md"), "```go\n"+strings.Join(lines, "\n")+"\n```") {
		t.Error("README.md does not show console/example_test.go's mounting code verbatim")
	}
}

// readFile returns the text of the file at path, failing the test when it
// cannot be read.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
