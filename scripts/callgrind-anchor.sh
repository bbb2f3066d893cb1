#!/usr/bin/env bash
# Instructions per turn of a benchmark, counted by callgrind: the benchmark
# runs at two iteration counts and the difference of the totals, divided by
# the difference of the counts, cancels start-up. Repeatable whatever else
# the machine is doing (it counts instructions, not seconds).
#
#   scripts/callgrind-anchor.sh                       # BenchmarkAnchorTurn in ./turn
#   scripts/callgrind-anchor.sh ./turn BenchmarkResume 200 1200
#   scripts/callgrind-anchor.sh ./turn BenchmarkAnchorResume 500 2500 github.com/kindgi/agents/turn.Resume
#
# A fifth argument counts only the instructions inside that function
# (callgrind --toggle-collect): a benchmark whose iterations do more than
# the call measured (BenchmarkAnchorResume parks its runs before the
# timer). GOGC and GODEBUG from the environment are kept (GODEBUG's
# settings after asyncpreemptoff=1), e.g. GOGC=off for the count without
# the collector, GODEBUG=gcstoptheworld=1 for a deterministic one.
#
# Needs valgrind (apt-get install -y valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=${1:-./turn}
bench=${2:-BenchmarkAnchorTurn}
n1=${3:-500}
n2=${4:-2500}
toggle=()
if [ -n "${5:-}" ]; then toggle=(--toggle-collect="$5"); fi
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test -c -o "$dir/bench.test" "$pkg"
count() {
  GODEBUG=asyncpreemptoff=1${GODEBUG:+,$GODEBUG} GOMAXPROCS=1 valgrind --tool=callgrind ${toggle[@]+"${toggle[@]}"} --callgrind-out-file="$dir/cg.$1" \
    "$dir/bench.test" -test.run '^$' -test.bench "^$bench\$" -test.benchtime "${1}x" -test.benchmem >"$dir/out.$1" 2>"$dir/err.$1"
  grep -E '^(summary|totals):' "$dir/cg.$1" | head -1 | awk '{print $2}'
}
i1=$(count "$n1")
i2=$(count "$n2")
allocs=$(grep -Eo '[0-9]+ allocs/op' "$dir/out.$n2" | head -1)
per=$(( (i2 - i1) / (n2 - n1) ))
echo "$bench ($pkg${5:+, inside $5}): $per instructions per op (Ir at ${n1}x = $i1, at ${n2}x = $i2), $allocs"
