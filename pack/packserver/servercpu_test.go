package packserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kindgi/agents/examples/packservice/demo"
)

// benchChildEnv, when set in the environment of the test binary, makes it
// a benchmark server instead of running tests (see TestMain): "pack",
// "bare" or "bare-text" names the handler it serves.
const benchChildEnv = "PACKSERVER_BENCH_CHILD"

// bareEnvelopeEcho is the baseline on the same bytes: a plain net/http
// JSON echo that reads the very request packserver reads (the whole
// invoke envelope), decodes it with encoding/json into typed structs and
// answers the very body packserver answers, validating nothing.
func bareEnvelopeEcho(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	var in struct {
		V    int    `json:"v"`
		Kind string `json:"kind"`
		Tool struct {
			ID string `json:"id"`
		} `json:"tool"`
		Input demo.EchoIO `json:"input"`
		Ctx   struct {
			TenantID  string `json:"tenantId"`
			RunID     string `json:"runId"`
			RequestID string `json:"requestId"`
		} `json:"ctx"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	out, _ := json.Marshal(struct {
		V      int         `json:"v"`
		Kind   string      `json:"kind"`
		Output demo.EchoIO `json:"output"`
	}{2, "result", in.Input})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// serveBenchChild is the child side of BenchmarkEchoServerCPU: it serves
// one handler on a loopback port, writes the port on stdout, then answers
// every line on stdin with the CPU time (user + system, ns) the process
// has used so far. It returns when stdin closes.
func serveBenchChild(which string) int {
	var h http.Handler
	switch which {
	case "pack":
		srv, err := demoService(context.Background(), testToken)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		h = srv
	case "bare":
		h = http.HandlerFunc(bareEnvelopeEcho)
	case "bare-text":
		h = http.HandlerFunc(bareEcho)
	default:
		fmt.Fprintln(os.Stderr, "unknown handler", which)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// PACKSERVER_BENCH_CPUPROFILE=dir writes each server's CPU profile to
	// dir/<handler>.pprof: the server side alone, net/http included.
	if dir := os.Getenv("PACKSERVER_BENCH_CPUPROFILE"); dir != "" {
		f, err := os.Create(filepath.Join(dir, which+".pprof"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		}()
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fmt.Println(int64(cpuTime()))
	}
	_ = hs.Close()
	return 0
}

// benchChild is a benchmark server process and the pipes to ask it for
// its CPU time.
type benchChild struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
	url string
}

func startBenchChild(b *testing.B, which string) *benchChild {
	b.Helper()
	// PACKSERVER_BENCH_EXEC, when set, is a command line each server is
	// started under, with %s for the handler's name: a valgrind
	// invocation for instruction counts (scripts/packserver-callgrind.sh).
	args := []string{os.Args[0], "-test.run=^$", "-test.bench=^$"}
	if wrap := os.Getenv("PACKSERVER_BENCH_EXEC"); wrap != "" {
		args = append(strings.Fields(strings.ReplaceAll(wrap, "%s", which)), args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), benchChildEnv+"="+which)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &benchChild{cmd: cmd, in: in, out: bufio.NewScanner(outPipe)}
	b.Cleanup(func() {
		_ = c.in.Close()
		_ = c.cmd.Wait()
	})
	if !c.out.Scan() {
		b.Fatalf("benchmark server %s did not start", which)
	}
	c.url = "http://127.0.0.1:" + strings.TrimSpace(c.out.Text())
	return c
}

// cpu returns the child's CPU time so far.
func (c *benchChild) cpu(b *testing.B) time.Duration {
	if _, err := io.WriteString(c.in, "\n"); err != nil {
		b.Fatal(err)
	}
	if !c.out.Scan() {
		b.Fatal("benchmark server went away")
	}
	n, err := strconv.ParseInt(c.out.Text(), 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return time.Duration(n)
}

// BenchmarkEchoServerCPU measures the CPU the SERVER spends per demo.echo
// call, against bare net/http JSON echoes, excluding the client's CPU:
// each service runs in its own process (this test binary re-executed,
// see serveBenchChild), which reports its own getrusage CPU time before
// and after each batch. Batches of calls (4 parallel keep-alive clients
// in this process, loopback HTTP/1.1) alternate between the services, so
// all see the same machine load.
//
//   - "bare" reads the same request bytes packserver reads (the whole
//     invoke envelope), decodes them with encoding/json into typed
//     structs and answers the same response bytes: the like-for-like
//     baseline. server-cpu-ratio = its CPU per call ÷ packserver's
//     (higher is better; 1 is parity; the aim is ≥ 0.8).
//   - "bare-text" is the older, smaller baseline of the other benchmarks
//     ({"text"} in and out): server-cpu-ratio-text.
func BenchmarkEchoServerCPU(b *testing.B) {
	const batch, clients = 256, 4
	packBody := toolCall("demo.echo", "bench", map[string]any{"text": "hello, pack service"})
	textBody := []byte(`{"text":"hello, pack service"}`)
	services := []struct {
		child *benchChild
		body  []byte
		cpu   time.Duration
		wall  time.Duration
	}{
		{child: startBenchChild(b, "pack"), body: packBody},
		{child: startBenchChild(b, "bare"), body: packBody},
		{child: startBenchChild(b, "bare-text"), body: textBody},
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	want := []byte(`{"v":2,"kind":"result","output":{"text":"hello, pack service"}}`)
	runBatch := func(i int) {
		s := &services[i]
		cpu0 := s.child.cpu(b)
		start := time.Now()
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				for range batch / clients {
					req, _ := invokeRequest(b.Context(), s.child.url, s.body)
					res, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					got, _ := io.ReadAll(res.Body)
					res.Body.Close()
					if res.StatusCode != 200 || (i < 2 && !bytes.Equal(got, want)) {
						b.Errorf("service %d: status %d: %s", i, res.StatusCode, got)
					}
				}
			})
		}
		wg.Wait()
		s.wall += time.Since(start)
		s.cpu += s.child.cpu(b) - cpu0
	}
	// Warm up every service (connections, first-call work).
	for i := range services {
		runBatch(i)
		services[i].cpu, services[i].wall = 0, 0
	}
	rounds := 0
	b.ReportAllocs()
	for b.Loop() {
		// Rotate the order so no service always follows another.
		for k := range services {
			runBatch((rounds + k) % len(services))
		}
		rounds++
	}
	calls := float64(rounds * batch)
	pack, bare, text := services[0], services[1], services[2]
	b.ReportMetric(float64(bare.cpu)/float64(pack.cpu), "server-cpu-ratio")
	b.ReportMetric(float64(text.cpu)/float64(pack.cpu), "server-cpu-ratio-text")
	b.ReportMetric(float64(pack.cpu.Nanoseconds())/calls, "server-cpu-ns/packcall")
	b.ReportMetric(float64(bare.cpu.Nanoseconds())/calls, "server-cpu-ns/barecall")
	b.ReportMetric(float64(text.cpu.Nanoseconds())/calls, "server-cpu-ns/textcall")
	b.ReportMetric(float64(bare.wall)/float64(pack.wall), "wall-ratio")
}
