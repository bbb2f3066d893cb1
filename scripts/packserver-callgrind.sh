#!/bin/sh
# Instruction counts per call of the pack service's server side (demo.echo)
# and of the bare net/http echoes, with valgrind --tool=callgrind, whatever
# the machine's load. BenchmarkEchoServerCPU runs each server in its own
# process; here each is started under callgrind, and the totals of two runs
# (N1 and N2 rounds of 256 calls per server) are subtracted to cancel the
# start-up (index load, schema compilation, runtime init).
#
# Usage: scripts/packserver-callgrind.sh [N1 N2]     (default 4 and 12)
set -eu
n1=${1:-4}
n2=${2:-12}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$root/pack/packserver"
go test -c -o "$out/packserver.test" .
for n in "$n1" "$n2"; do
	GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 \
	PACKSERVER_BENCH_EXEC="valgrind --tool=callgrind --callgrind-out-file=$out/%s.$n.cg" \
		"$out/packserver.test" -test.run '^$' -test.bench '^BenchmarkEchoServerCPU$' -test.benchtime "${n}x" >/dev/null 2>&1
done
total() { sed -n 's/^totals: *\([0-9]*\).*/\1/p; s/^summary: *\([0-9]*\).*/\1/p' "$1" | head -1; }
calls=$(( (n2 - n1) * 256 ))
for s in pack bare bare-text; do
	a=$(total "$out/$s.$n1.cg")
	b=$(total "$out/$s.$n2.cg")
	echo "$s $(( (b - a) / calls ))"
done | awk '{ ir[$1] = $2; print $1 ": " $2 " instructions per call" }
	END { printf "ratio bare/pack: %.3f   bare-text/pack: %.3f\n", ir["bare"] / ir["pack"], ir["bare-text"] / ir["pack"] }'
