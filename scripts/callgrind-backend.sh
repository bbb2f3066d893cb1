#!/usr/bin/env bash
# PostgreSQL backend instructions per op of a pgstore benchmark, counted by
# callgrind: a scratch cluster (initdb in a temporary directory, port
# 5499, autovacuum off, no timed checkpoints) runs under
# valgrind --trace-children=yes, the benchmark binary runs against it at
# two iteration counts, and the difference of the instructions of the
# busiest server process (the benchmark's one backend: use a 1-worker
# benchmark), divided by the difference of the counts, cancels start-up.
# Repeatable whatever else the machine is doing, unlike backend-cpu-ms.
#
#   scripts/callgrind-backend.sh                                  # the turn, 1 worker
#   scripts/callgrind-backend.sh ./pgstore BenchmarkResumeParkedTurn 20 70
#   BIN=/tmp/old.test scripts/callgrind-backend.sh                # a prebuilt test binary
#
# Needs valgrind and PostgreSQL's server binaries (pg_config --bindir);
# run as root (the cluster runs as the postgres user) or as that user.
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=${1:-./pgstore}
bench=${2:-'BenchmarkTurnWithOneToolCall/synchronous_commit=on/workers=1$'}
n1=${3:-20}
n2=${4:-70}
port=${PORT:-5499}
pgbin=${PGBIN:-$(pg_config --bindir)}
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
dir=$(mktemp -d)
chmod 777 "$dir"
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -c "$*"; else sh -c "$*"; fi; }
trap 'as_pg "$pgbin/pg_ctl -D $dir/data -m immediate stop" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
bin=${BIN:-}
if [ -z "$bin" ]; then
  go test -c -o "$dir/bench.test" "$pkg"
  bin=$dir/bench.test
fi
as_pg "$pgbin/initdb -D $dir/data -A trust -U postgres" >/dev/null
count() {
  mkdir -p "$dir/cg.$1" && chmod 777 "$dir/cg.$1"
  as_pg "nohup valgrind --tool=callgrind --trace-children=yes --callgrind-out-file=$dir/cg.$1/%p \
    $pgbin/postgres -D $dir/data -p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=30 \
    -c autovacuum=off -c checkpoint_timeout=3600 -c max_wal_size=10GB >$dir/server.$1 2>&1 &"
  for _ in $(seq 1 120); do
    as_pg "$pgbin/pg_isready -h 127.0.0.1 -p $port" >/dev/null 2>&1 && break
    sleep 1
  done
  (cd "$pkg" && KINDGI_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable" \
    "$bin" -test.run '^$' -test.bench "$bench" -test.benchtime "${1}x" >"$dir/out.$1" 2>&1)
  as_pg "$pgbin/pg_ctl -D $dir/data -m fast -w -t 300 stop" >/dev/null
  local max=0 n f
  for f in "$dir/cg.$1"/*; do
    n=$(grep -E '^(summary|totals):' "$f" | head -1 | awk '{print $2}')
    [ "${n:-0}" -gt "$max" ] && max=$n
  done
  echo "$max"
}
i1=$(count "$n1")
i2=$(count "$n2")
grep -q '^PASS' "$dir/out.$n2" || { cat "$dir/out.$n2" >&2; exit 1; }
per=$(( (i2 - i1) / (n2 - n1) ))
echo "$bench ($pkg): $per backend instructions per op (busiest server process: Ir at ${n1}x = $i1, at ${n2}x = $i2)"
