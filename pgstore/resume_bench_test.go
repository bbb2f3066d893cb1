package pgstore

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/turn"
)

// BenchmarkResumeParkedTurn resumes turns parked on an approved tool call
// on pgstore, one at a time on one connection: each Resume reads the run
// (snapshot and journal), replays the parked journal, runs the approved
// tool call and the final model call, and finishes the run. The turns are
// invoked (model call, park on the approval) and approved before the
// timer starts. It reports the median and 90th percentile latency of one
// Resume (p50-ms, p90-ms), and the client and backend CPU per Resume, as
// BenchmarkTurnWithOneToolCall does; durable commits.
func BenchmarkResumeParkedTurn(b *testing.B) {
	pool, rt := tracedPool(b, 1, "synchronous_commit", "on")
	f := &resumeFixture{turnFixture: newTurnFixture(b, New(pool, nil)), a: lookupAgent(b, agent.GateAlwaysAsk)}
	bb := f.resumeBindings()
	ctx := context.Background()
	pids := backendPIDs(b, pool, 1)
	resume := func(run string) { f.resumeToEnd(b, ctx, bb, run) }
	resume(f.parkApproved(b)) // warm up: prepare the statements on the connection
	runs := make([]string, b.N)
	for i := range runs {
		runs[i] = f.parkApproved(b)
	}
	rt.reset()
	took := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	cpu, server := processCPU(), backendCPU(pids)
	for i, run := range runs {
		start := time.Now()
		resume(run)
		took[i] = time.Since(start)
	}
	cpu, server = processCPU()-cpu, backendCPU(pids)-server
	b.StopTimer()
	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
	b.ReportMetric(ms(took[len(took)*9/10]), "p90-ms")
	reportCosts(b, rt, cpu, server, "op")
}

// leaseInOpen is the Store's journal driver with the optimistic lease
// turned off: a drive that may take its run's lease with its first write
// (journal.LeaseOnWrite) takes it in Open instead, in Open's own commit.
type leaseInOpen struct{ *Store }

// Open implements journal.Driver.
func (d leaseInOpen) Open(ctx context.Context, in journal.OpenInput) (journal.Drive, error) {
	if in.Lease == journal.LeaseOnWrite {
		in.Lease = journal.LeaseNow
	}
	return d.Store.Open(ctx, in)
}

// BenchmarkResumeLeaseInterleaved is BenchmarkResumeParkedTurn with the
// two ways of taking the lease in one process, interleaved Resume by
// Resume so that both see the same load: "reopen" takes it in the reopen
// round trip (its own commit), "first-write" with the first write.
// It reports each one's p50 and
// commits, and the ratio of the p50s (first-write over reopen).
func BenchmarkResumeLeaseInterleaved(b *testing.B) {
	pool, rt := tracedPool(b, 1, "synchronous_commit", "on")
	s := New(pool, nil)
	f := &resumeFixture{turnFixture: newTurnFixture(b, s), a: lookupAgent(b, agent.GateAlwaysAsk)}
	first := f.resumeBindings()
	reopen := first
	reopen.Journal = leaseInOpen{s}
	ctx := context.Background()
	paths := [2]turn.Bindings{reopen, first}
	for _, bb := range paths {
		f.resumeToEnd(b, ctx, bb, f.parkApproved(b)) // warm up both
	}
	n := max(b.N, 2)
	runs := make([]string, n)
	for i := range runs {
		runs[i] = f.parkApproved(b)
	}
	var took [2][]time.Duration
	var commits [2]int
	b.ReportAllocs()
	b.ResetTimer()
	for i, run := range runs {
		k := i % 2
		_, w0 := rt.statements()
		start := time.Now()
		f.resumeToEnd(b, ctx, paths[k], run)
		took[k] = append(took[k], time.Since(start))
		_, w1 := rt.statements()
		commits[k] += w1 - w0
	}
	b.StopTimer()
	p50 := func(k int) float64 {
		slices.Sort(took[k])
		return float64(took[k][len(took[k])/2]) / 1e6
	}
	r, fw := p50(0), p50(1)
	b.ReportMetric(r, "p50-ms-reopen")
	b.ReportMetric(fw, "p50-ms-first-write")
	b.ReportMetric(fw/r, "p50-ratio")
	b.ReportMetric(float64(commits[0])/float64(len(took[0])), "commits-reopen")
	b.ReportMetric(float64(commits[1])/float64(len(took[1])), "commits-first-write")
}
