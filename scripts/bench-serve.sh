#!/usr/bin/env bash
# Benchmark GET /fast with wrk: each `slowlab serve` worker model and real
# Gunicorn 23.0.0 (sync, 2 workers) serving harness/python/slowlab_app.py,
# one after the other on free loopback ports, with the same wrk settings.
#
# Usage: scripts/bench-serve.sh            (defaults: wrk -t1 -c4 -d10s)
#   WRK_THREADS=1 WRK_CONNS=4 WRK_DURATION=10s scripts/bench-serve.sh
#   GUNICORN=/path/to/gunicorn scripts/bench-serve.sh
#
# wrk speaks keep-alive, but every server here answers `Connection: close`,
# so wrk opens a new connection per request: the figures include a TCP
# handshake each, as the experiment's /fast client does. No CPU caps are
# applied; wrk shares the machine's cores with the server under test.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
WRK_THREADS=${WRK_THREADS:-1}
WRK_CONNS=${WRK_CONNS:-4}
WRK_DURATION=${WRK_DURATION:-10s}
GUNICORN=${GUNICORN:-$ROOT/.slowlab/venv/bin/gunicorn}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

TMP=$(mktemp -d)
SERVER_PID=""

stop_server() {
    if [[ -n $SERVER_PID ]]; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        # Gunicorn's arbiter stops its workers on SIGTERM; give it time, then
        # make sure.
        for _ in $(seq 50); do
            kill -0 "$SERVER_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}

cleanup() {
    stop_server
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

command -v wrk >/dev/null || { echo "bench-serve: wrk not found (apt-get install wrk)" >&2; exit 1; }
[[ -x $GUNICORN ]] || { echo "bench-serve: no gunicorn at $GUNICORN (set GUNICORN=)" >&2; exit 1; }

echo "building slowlab (release) ..." >&2
cargo build --quiet --release -p harness --bin slowlab
SLOWLAB=$CARGO_TARGET_DIR/release/slowlab

# Waits for the ready line in "$1"; prints its address.
ready_addr() {
    local out=$1 addr
    for _ in $(seq 100); do
        addr=$(sed -n '1s/^listening on \([^ ]*\).*/\1/p' "$out" 2>/dev/null)
        if [[ -n $addr ]]; then
            echo "$addr"
            return 0
        fi
        sleep 0.1
    done
    echo "bench-serve: no ready line in $out; stderr follows" >&2
    cat "$TMP/err" >&2
    return 1
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Waits until GET /fast answers 200 at "$1".
wait_http() {
    for _ in $(seq 100); do
        if curl -sf -o /dev/null "http://$1/fast"; then return 0; fi
        sleep 0.1
    done
    echo "bench-serve: $1 never answered; log follows" >&2
    cat "$TMP/err" >&2
    return 1
}

ROWS=()

# Runs wrk against "$2" and records one table row named "$1".
bench() {
    local name=$1 addr=$2 out=$TMP/wrk-$1.txt
    # A short warm-up so that the first connections' costs do not count.
    wrk -t"$WRK_THREADS" -c"$WRK_CONNS" -d1s "http://$addr/fast" >/dev/null
    wrk -t"$WRK_THREADS" -c"$WRK_CONNS" -d"$WRK_DURATION" --latency "http://$addr/fast" >"$out"
    local rps p50 p99 errors non2xx
    rps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
    p50=$(awk '$1 == "50%" {print $2}' "$out")
    p99=$(awk '$1 == "99%" {print $2}' "$out")
    # "Socket errors: connect A, read B, write C, timeout D", however indented.
    errors=$(awk '/Socket errors:/ {gsub(",", ""); for (i = 1; i < NF; i++) if ($i ~ /^(connect|read|write|timeout)$/) n += $(i + 1); print n}' "$out")
    non2xx=$(awk '/Non-2xx/ {print $NF}' "$out")
    ROWS+=("$(printf '%-16s %12s %10s %10s %8s %8s' "$name" "$rps" "$p50" "$p99" "${errors:-0}" "${non2xx:-0}")")
    echo "  $name: $rps req/s" >&2
}

run_slowlab() {
    local name=$1; shift
    # One file per server: the redirection of a background job happens
    # later, so a shared file could still show the previous server's line.
    "$SLOWLAB" serve --listen 127.0.0.1:0 "$@" >"$TMP/out-$name" 2>"$TMP/err" &
    SERVER_PID=$!
    local addr
    addr=$(ready_addr "$TMP/out-$name")
    bench "$name" "$addr"
    stop_server
}

run_gunicorn() {
    local port
    port=$(free_port)
    "$GUNICORN" --workers 2 --worker-class sync --bind "127.0.0.1:$port" \
        --chdir "$ROOT/harness/python" slowlab_app:application >"$TMP/out" 2>"$TMP/err" &
    SERVER_PID=$!
    wait_http "127.0.0.1:$port"
    bench gunicorn-sync2 "127.0.0.1:$port"
    stop_server
}

CORES=$(nproc)
echo "running wrk -t$WRK_THREADS -c$WRK_CONNS -d$WRK_DURATION --latency on /fast ..." >&2
run_slowlab rust-sync2 --model sync --workers 2
run_slowlab rust-threads4 --model threads --workers 4
run_slowlab "rust-async$CORES" --model async
run_gunicorn

echo
echo "GET /fast, wrk -t$WRK_THREADS -c$WRK_CONNS -d$WRK_DURATION --latency, new connection per request"
echo "$(uname -sr), $CORES cores, $("$GUNICORN" --version 2>&1 | head -1), $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)"
printf '%-16s %12s %10s %10s %8s %8s\n' server "requests/s" p50 p99 "sock err" "non-2xx"
printf '%s\n' "${ROWS[@]}"
