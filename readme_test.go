package agents_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kindgi/agents/internal/pgtest"
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

// A README shell block is one of a walkthrough, run by
// TestReadmeWalkthroughs, or says why it is not run: the line before it is
// <!-- readme_test: run NAME --> or <!-- readme_test: not run, REASON -->.
var readmeMarker = regexp.MustCompile(`^<!-- readme_test: (run ([a-z-]+)|not run, .+) -->$`)

// walkthrough is the commands of the README's shell blocks marked with
// one name, in order; a line ending in a backslash continues.
type walkthrough struct {
	name     string
	commands []string
}

// readmeWalkthroughs parses README.md: its walkthroughs in the order they
// first appear, and an error for a shell block without a marker.
func readmeWalkthroughs(t *testing.T) []*walkthrough {
	t.Helper()
	src, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	var out []*walkthrough
	byName := map[string]*walkthrough{}
	for i := 0; i < len(lines); i++ {
		if lines[i] != "```sh" {
			continue
		}
		j := i - 1
		for j >= 0 && strings.TrimSpace(lines[j]) == "" {
			j--
		}
		var m []string
		if j >= 0 {
			m = readmeMarker.FindStringSubmatch(lines[j])
		}
		if m == nil {
			t.Errorf("README.md:%d: a shell block without a <!-- readme_test: run NAME --> or <!-- readme_test: not run, REASON --> line before it", i+1)
		}
		var w *walkthrough
		if m != nil && m[2] != "" {
			if w = byName[m[2]]; w == nil {
				w = &walkthrough{name: m[2]}
				byName[m[2]] = w
				out = append(out, w)
			}
		}
		cmd := ""
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			if w == nil {
				continue
			}
			if l, ok := strings.CutSuffix(lines[i], "\\"); ok {
				cmd += l
				continue
			}
			if cmd += lines[i]; strings.TrimSpace(cmd) != "" {
				w.commands = append(w.commands, cmd)
			}
			cmd = ""
		}
	}
	return out
}

// readmeChecks are what each walkthrough's output must show, beyond every
// command succeeding; a walkthrough the README has and this map lacks
// fails, so that none runs unchecked.
var readmeChecks = map[string][]*regexp.Regexp{
	"quickstart": {regexp.MustCompile(`(?m)^provenance: signed by \S+, verifies: true$`)},
	"cli": {
		regexp.MustCompile(`contract-drafter\.yaml: ok`),
		regexp.MustCompile(`Acme LLP`),
	},
	"postgres": {
		regexp.MustCompile(`(?m)^parked run \S+`),
		regexp.MustCompile(`(?m)^run \S+ completed: `),
		regexp.MustCompile(`(?m)^acme\.send-email ran 1 time\(s\) for the run$`),
	},
	"eval": {
		regexp.MustCompile(`(?m)^evaluated acme\.support@1\.1\.0 on them \(the tool ran 0 times\)$`),
		regexp.MustCompile(`(?m)^REGRESSED run-2 `),
	},
	"worker": {
		// The kill landed mid-run and worker 2 took over.
		regexp.MustCompile(`(?m)^worker \d+: run \S+: continuing after the \d+ journal entries of an earlier drive$`),
		regexp.MustCompile(`(?m)^20 runs: 16 completed, 4 parked, 0 failed$`),
		regexp.MustCompile(`(?m)^  kindgi approvals approve --tenant acme-workers --approver \S+ --reason "looks right" \S+$`),
		regexp.MustCompile(`(?m)^20 runs: 17 completed, 3 parked, 0 failed$`),
		regexp.MustCompile(`(?m)^status\s+completed`),
	},
}

// readmeCaptures fill a command's placeholders from what the commands
// before it printed, as a reader copies an id from their terminal: the
// first match of each pattern, submatches named by placeholder.
var readmeCaptures = []*regexp.Regexp{
	regexp.MustCompile(`run (?P<RUN_ID>\S+) parked on approval (?P<APPROVAL_ID>\S+);`),
	regexp.MustCompile(`(?m)^parked run (?P<RUN_ID>\S+)$`),
}

// TestReadmeWalkthroughs runs each walkthrough of README.md as written,
// command by command in one bash session, the way a newcomer types them
// into a terminal in a clone, and checks what it prints (readmeChecks).
// What differs from a newcomer's terminal, and only that:
//   - the database is a fresh one (the export of KINDGI_DATABASE_URL is
//     pointed at it);
//   - `go install` installs into a temporary GOBIN, first on PATH;
//   - `go run ./PKG` runs PKG built with go build beforehand (so a time
//     bound covers the command, not the compiler), and `go test ./...`
//     is not run: it is what runs this test;
//   - RUN_ID and APPROVAL_ID are the ids the commands before printed.
//
// Every command must exit 0 within readmeCommandTimeout; processes a
// walkthrough starts in the background are killed when it ends.
func TestReadmeWalkthroughs(t *testing.T) {
	walks := readmeWalkthroughs(t)
	if len(walks) == 0 {
		t.Fatal("README.md has no walkthrough")
	}
	tmp := t.TempDir()
	bin, gobin := filepath.Join(tmp, "bin"), filepath.Join(tmp, "gobin")
	var pkgs []string
	for _, w := range walks {
		for _, c := range w.commands {
			for _, m := range goRunPattern.FindAllStringSubmatch(c, -1) {
				pkgs = append(pkgs, m[1])
			}
		}
	}
	if len(pkgs) > 0 {
		build := exec.Command("go", append([]string{"build", "-o", bin + "/"}, pkgs...)...)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", pkgs, err, out)
		}
	}
	for _, w := range walks {
		t.Run(w.name, func(t *testing.T) {
			checks, ok := readmeChecks[w.name]
			if !ok {
				t.Fatalf("walkthrough %q has no checks in readmeChecks", w.name)
			}
			dbURL := ""
			for _, c := range w.commands {
				if strings.Contains(c, "KINDGI_DATABASE_URL=") {
					dbURL = pgtest.FreshDatabase(t, pgtest.AdminURL(t), "kindgi_readme_")
					break
				}
			}
			out := runWalkthrough(t, w, bin, gobin, dbURL)
			for _, re := range checks {
				if !re.MatchString(out) {
					t.Errorf("the %s walkthrough printed no %s:\n%s", w.name, re, out)
				}
			}
		})
	}
}

// readmeCommandTimeout bounds one command of a walkthrough (go install
// compiles on a cold cache).
const readmeCommandTimeout = 5 * time.Minute

var (
	goRunPattern  = regexp.MustCompile(`\bgo run (\./[\w./-]+)`)
	exportDBURL   = regexp.MustCompile(`^export KINDGI_DATABASE_URL=\S+`)
	doneLine      = regexp.MustCompile(`(?m)^@@readme-done-(\d+) (\d+)@@$`)
	readmeGoTest  = regexp.MustCompile(`^go test \./\.\.\.(\s|$)`)
	readmeHolders = regexp.MustCompile(`\b(RUN_ID|APPROVAL_ID)\b`)
)

// runWalkthrough types w's commands into one bash session and returns
// everything it printed.
func runWalkthrough(t *testing.T, w *walkthrough, bin, gobin, dbURL string) string {
	t.Helper()
	sh := exec.Command("bash", "--noprofile", "--norc", "-s")
	sh.Env = append(os.Environ(), "GOBIN="+gobin, "PATH="+gobin+string(os.PathListSeparator)+os.Getenv("PATH"), "KINDGI_DATABASE_URL=")
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// An os.Pipe, not an io.Writer: Wait must not wait for the processes
	// the session leaves in the background, which hold its output too.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	sh.Stdout, sh.Stderr = pw, pw
	err = sh.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() {
		waitErr = sh.Wait()
		close(exited)
	}()
	var (
		mu     sync.Mutex
		output strings.Builder
		grew   = make(chan struct{}, 1)
	)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 4096)
		for {
			n, err := pr.Read(buf)
			mu.Lock()
			output.Write(buf[:n])
			mu.Unlock()
			select {
			case grew <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		// The session and everything it started in the background: once
		// they are gone, the output pipe ends.
		_ = syscall.Kill(-sh.Process.Pid, syscall.SIGKILL)
		<-exited
		select {
		case <-readDone:
		case <-time.After(30 * time.Second):
			t.Error("a process the walkthrough started outlived its session")
		}
		pr.Close()
	})
	printed := func() string {
		mu.Lock()
		defer mu.Unlock()
		return output.String()
	}

	for n, c := range w.commands {
		line := strings.TrimSpace(c)
		if readmeGoTest.MatchString(line) {
			continue
		}
		if dbURL != "" {
			line = exportDBURL.ReplaceAllLiteralString(line, "export KINDGI_DATABASE_URL='"+dbURL+"'")
		}
		line = goRunPattern.ReplaceAllStringFunc(line, func(m string) string {
			return filepath.Join(bin, filepath.Base(goRunPattern.FindStringSubmatch(m)[1]))
		})
		var missing []string
		line = readmeHolders.ReplaceAllStringFunc(line, func(name string) string {
			if v := captured(printed(), name); v != "" {
				return "'" + v + "'"
			}
			missing = append(missing, name)
			return name
		})
		if len(missing) > 0 {
			t.Fatalf("%s: nothing printed before %q gives %v:\n%s", w.name, c, missing, printed())
		}
		fmt.Fprintf(stdin, "%s\n__readme_rc=$?; echo; echo \"@@readme-done-%d $__readme_rc@@\"\n", line, n)
		deadline := time.NewTimer(readmeCommandTimeout)
		for done := false; !done; {
			select {
			case <-grew:
				for _, m := range doneLine.FindAllStringSubmatch(printed(), -1) {
					if m[1] == fmt.Sprint(n) {
						if m[2] != "0" {
							t.Fatalf("%s: %q exited %s:\n%s", w.name, c, m[2], printed())
						}
						done = true
					}
				}
			case <-deadline.C:
				t.Fatalf("%s: %q did not finish within %v:\n%s", w.name, c, readmeCommandTimeout, printed())
			}
		}
		deadline.Stop()
	}
	stdin.Close()
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("%s: the session ended with %v", w.name, waitErr)
		}
	case <-time.After(time.Minute):
		t.Errorf("%s: the session did not end once its commands had run", w.name)
	}
	return printed()
}

// captured is the value of placeholder name in what was printed: from the
// first readmeCaptures pattern that has it and matches.
func captured(printed, name string) string {
	for _, re := range readmeCaptures {
		i := re.SubexpIndex(name)
		if i < 0 {
			continue
		}
		if m := re.FindStringSubmatch(printed); m != nil {
			return m[i]
		}
	}
	return ""
}

// TestReadmeWalkthroughsAreFound keeps the parser honest: the README has
// the walkthroughs a newcomer follows, and its first commands are still
// the quickstart and the tests.
func TestReadmeWalkthroughsAreFound(t *testing.T) {
	got := map[string][]string{}
	for _, w := range readmeWalkthroughs(t) {
		got[w.name] = w.commands
	}
	for _, name := range []string{"quickstart", "cli", "postgres", "worker"} {
		if len(got[name]) == 0 {
			t.Errorf("README.md has no %s walkthrough (found %v)", name, got)
		}
	}
	first := strings.Join(got["quickstart"], "\n")
	if !strings.Contains(first, "go run ./examples/quickstart") || !strings.Contains(first, "go test ./...") {
		t.Errorf("the README's first commands are not the quickstart and the tests: %q", first)
	}
}
