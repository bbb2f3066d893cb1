package packserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kindgi/agents/examples/packservice/demo"
)

// bareEcho is the baseline: a plain net/http JSON echo of {text}, with
// the same body reading, decoding and encoding a minimal service does.
func bareEcho(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	var in demo.EchoIO
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	out, _ := json.Marshal(in)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

func benchService(b *testing.B) http.Handler {
	srv, err := demoService(b.Context(), testToken)
	if err != nil {
		b.Fatal(err)
	}
	return srv
}

// echoCase is demo.echo through packserver, or the bare echo, with its
// request body.
type echoCase struct {
	name    string
	handler http.Handler
	body    []byte
}

func echoCases(b *testing.B) []echoCase {
	return []echoCase{
		{"packserver", benchService(b), toolCall("demo.echo", "bench", map[string]any{"text": "hello, pack service"})},
		{"bare", http.HandlerFunc(bareEcho), []byte(`{"text":"hello, pack service"}`)},
	}
}

// postEcho posts body to url's /v1/invoke over client and reports whether
// it was answered 200; a failure is reported on b.
func postEcho(b *testing.B, client *http.Client, url string, body []byte) bool {
	req, _ := invokeRequest(b.Context(), url, body)
	res, err := client.Do(req)
	if err != nil {
		b.Error(err)
		return false
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		b.Errorf("status %d", res.StatusCode)
		return false
	}
	return true
}

// BenchmarkEchoLoopback compares demo.echo through packserver with the
// bare echo handler, both over loopback HTTP/1.1 with keep-alive and
// parallel clients. Throughput ratio = bare ns/op ÷ packserver ns/op.
func BenchmarkEchoLoopback(b *testing.B) {
	for _, c := range echoCases(b) {
		b.Run(c.name, func(b *testing.B) {
			ts := httptest.NewServer(c.handler)
			defer ts.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
			defer client.CloseIdleConnections()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if !postEcho(b, client, ts.URL, c.body) {
						return
					}
				}
			})
		})
	}
}

// BenchmarkEchoInProcess measures the service's own cost per call, with
// no network: ServeHTTP on a recorder.
func BenchmarkEchoInProcess(b *testing.B) {
	for _, c := range echoCases(b) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if rec := invokeInProcess(b.Context(), c.handler, c.body); rec.Code != 200 {
					b.Fatalf("status %d", rec.Code)
				}
			}
		})
	}
}

// BenchmarkEchoThroughputRatio interleaves batches of demo.echo calls
// through packserver with batches of the bare echo, over loopback with 4
// parallel clients, so both see the same machine load. It reports the
// throughput ratio packserver ÷ bare by wall time ("ratio") and by the
// process's CPU time, client and server together ("cpu-ratio", steadier on
// a shared machine; the calls are CPU-bound, so it is the throughput ratio
// a saturated service would see), higher is better, 1 is parity; and the
// wall and CPU time per call of each.
func BenchmarkEchoThroughputRatio(b *testing.B) {
	const batch, clients = 64, 4
	packBody := toolCall("demo.echo", "bench", map[string]any{"text": "hello, pack service"})
	bareBody := []byte(`{"text":"hello, pack service"}`)
	packTS := httptest.NewServer(benchService(b))
	defer packTS.Close()
	bareTS := httptest.NewServer(http.HandlerFunc(bareEcho))
	defer bareTS.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	runBatch := func(url string, body []byte) (time.Duration, time.Duration) {
		cpu0 := cpuTime()
		start := time.Now()
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				for range batch / clients {
					if !postEcho(b, client, url, body) {
						return
					}
				}
			})
		}
		wg.Wait()
		return time.Since(start), cpuTime() - cpu0
	}
	var tPack, tBare, cPack, cBare time.Duration
	add := func(t, c *time.Duration, url string, body []byte) {
		wall, cpu := runBatch(url, body)
		*t += wall
		*c += cpu
	}
	rounds := 0
	b.ReportAllocs()
	for b.Loop() {
		if rounds%2 == 0 {
			add(&tPack, &cPack, packTS.URL, packBody)
			add(&tBare, &cBare, bareTS.URL, bareBody)
		} else {
			add(&tBare, &cBare, bareTS.URL, bareBody)
			add(&tPack, &cPack, packTS.URL, packBody)
		}
		rounds++
	}
	calls := float64(rounds * batch)
	b.ReportMetric(float64(tBare)/float64(tPack), "ratio")
	b.ReportMetric(float64(cBare)/float64(cPack), "cpu-ratio")
	b.ReportMetric(float64(tPack.Nanoseconds())/calls, "ns/packcall")
	b.ReportMetric(float64(tBare.Nanoseconds())/calls, "ns/barecall")
	b.ReportMetric(float64(cPack.Nanoseconds())/calls, "cpu-ns/packcall")
	b.ReportMetric(float64(cBare.Nanoseconds())/calls, "cpu-ns/barecall")
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
