#!/usr/bin/env bash
# Instructions per operation of two benchmarks of one package, counted by
# callgrind in one test binary, and their ratio: each benchmark runs at two
# iteration counts and the difference of the totals, divided by the
# difference of the counts, cancels start-up (as scripts/callgrind-anchor.sh
# does for one benchmark). Repeatable whatever else the machine is doing.
#
#   scripts/callgrind-ratio.sh ./prompt BenchmarkRender2KCached BenchmarkRender2KOsteele 200 1000
#
# Needs valgrind (apt-get install -y valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=$1
a=$2
b=$3
n1=${4:-200}
n2=${5:-1000}
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test -c -o "$dir/bench.test" "$pkg"
count() { # benchmark, iterations
  GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file="$dir/cg.$1.$2" \
    "$dir/bench.test" -test.run '^$' -test.bench "^$1\$" -test.benchtime "${2}x" -test.benchmem >"$dir/out.$1.$2" 2>"$dir/err.$1.$2"
  grep -E '^(summary|totals):' "$dir/cg.$1.$2" | head -1 | awk '{print $2}'
}
per() { # benchmark
  local i1 i2
  i1=$(count "$1" "$n1")
  i2=$(count "$1" "$n2")
  echo $(( (i2 - i1) / (n2 - n1) ))
}
pa=$(per "$a")
pb=$(per "$b")
allocs() { grep -Eo '[0-9]+ allocs/op' "$dir/out.$1.$n2" | head -1; }
echo "$a: $pa instructions per op, $(allocs "$a")"
echo "$b: $pb instructions per op, $(allocs "$b")"
awk -v x="$pa" -v y="$pb" 'BEGIN { printf "ratio %s / %s = %.3f\n", "'"$a"'", "'"$b"'", x / y }'
