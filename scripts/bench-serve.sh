#!/usr/bin/env bash
# Benchmark GET /fast with wrk: each `slowlab serve` worker model, real
# Gunicorn 23.0.0 (sync, 2 workers) serving lab/python/slowlab_app.py,
# and the peer, NGINX 1.22 answering the same 12 bytes with `return 200`
# (one worker), one after the other on free loopback ports, with the same
# wrk settings, over ROUNDS rounds.
#
# Usage: scripts/bench-serve.sh        (defaults: wrk -t1 -c8 -d8s, 2 rounds)
#   WRK_THREADS=1 WRK_CONNS=8 WRK_DURATION=8s ROUNDS=2 scripts/bench-serve.sh
#   GUNICORN=/path/to/gunicorn NGINX=/path/to/nginx scripts/bench-serve.sh
#   SLOWLAB_BASE=/path/to/older/slowlab scripts/bench-serve.sh
#     also measures that binary's sync x2 and async x1 in every round, as
#     base-sync2 and base-async1 right after their counterparts, so that a
#     change is compared with what it changed in the same run.
#
# Every server answers `Connection: close` (and wrk asks for it), so wrk
# opens a new connection per request: the figures include a TCP handshake
# each, as the experiment's /fast client does. No CPU caps are applied. On a
# machine with two cores or more the server runs on CPU 1 and wrk on CPU 0.
#
# CPU per request is the server's utime+stime increment (all its threads and
# processes) over the wrk run divided by the requests wrk completed; it stays
# stabler than requests/s on a noisy machine, but a neighbour's load still
# moves it, so NGINX runs through each round and is measured before the
# first server and after each one; `vs_nginx` divides a server's figure by
# the mean of the NGINX figures just before and after it. After the rows of
# every round, a summary per server: the median over the rounds and the
# range, which shows how much the figures move between rounds.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck source=scripts/bench-nginx.sh
source scripts/bench-nginx.sh
# shellcheck source=scripts/bench-median.sh
source scripts/bench-median.sh
WRK_THREADS=${WRK_THREADS:-1}
WRK_CONNS=${WRK_CONNS:-8}
WRK_DURATION=${WRK_DURATION:-8s}
ROUNDS=${ROUNDS:-2}
GUNICORN=${GUNICORN:-$ROOT/.slowlab/venv/bin/gunicorn}
NGINX=${NGINX:-$(command -v nginx || echo "$ROOT/.slowlab/nginx/usr/sbin/nginx")}
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
    if [[ -n ${NGINX_PID:-} ]]; then kill -TERM "$NGINX_PID" 2>/dev/null || true; fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

need_tool wrk
[[ -x $NGINX ]] || { echo "bench-serve: no nginx at $NGINX (slowlab prepare, or set NGINX=)" >&2; exit 1; }
HAVE_GUNICORN=1
[[ -x $GUNICORN ]] || { echo "bench-serve: no gunicorn at $GUNICORN (set GUNICORN=); skipping it" >&2; HAVE_GUNICORN=0; }

if [[ -z ${SLOWLAB:-} ]]; then
    echo "building slowlab (release) ..." >&2
    cargo build --quiet --release -p harness --bin slowlab
    SLOWLAB=$CARGO_TARGET_DIR/release/slowlab
fi

CORES=$(nproc)
SERVER_CPU=() WRK_CPU=()
if ((CORES >= 2)); then
    SERVER_CPU=(taskset -c 1)
    WRK_CPU=(taskset -c 0)
fi

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

# CPU ticks (utime+stime, every thread) of "$1" and its descendants.
cpu_ticks() {
    local pid=$1 total=0 child
    if [[ -r /proc/$pid/stat ]]; then
        # Fields 14 and 15, counted after the parenthesised command name.
        total=$(sed 's/^.*) //' "/proc/$pid/stat" | awk '{ print $12 + $13 }')
    fi
    for child in $(pgrep -P "$pid" || true); do
        total=$((total + $(cpu_ticks "$child")))
    done
    echo "$total"
}

HZ=$(getconf CLK_TCK)
ROWS=()
ROW_FORMAT='%-16s %12s %10s %10s %8s %8s %11s'
TAIL_FORMAT=' %8s %5s'

# Runs wrk against "$2" (server pid "$3"); sets CPU_US and ROW (a table row
# named "$1" without its last columns, vs_nginx and round).
measure() {
    local name=$1 addr=$2 pid=$3 out=$TMP/wrk-$1.txt
    # A short warm-up so that the first connections' costs do not count.
    "${WRK_CPU[@]}" wrk -t"$WRK_THREADS" -c"$WRK_CONNS" -d1s -H 'Connection: close' "http://$addr/fast" >/dev/null
    local before after
    before=$(cpu_ticks "$pid")
    "${WRK_CPU[@]}" wrk -t"$WRK_THREADS" -c"$WRK_CONNS" -d"$WRK_DURATION" --latency \
        -H 'Connection: close' "http://$addr/fast" >"$out"
    after=$(cpu_ticks "$pid")
    local rps p50 p99 errors non2xx requests
    rps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
    p50=$(awk '$1 == "50%" {print $2}' "$out")
    p99=$(awk '$1 == "99%" {print $2}' "$out")
    requests=$(awk '/requests in/ {print $1}' "$out")
    # "Socket errors: connect A, read B, write C, timeout D", however indented.
    errors=$(awk '/Socket errors:/ {gsub(",", ""); for (i = 1; i < NF; i++) if ($i ~ /^(connect|read|write|timeout)$/) n += $(i + 1); print n}' "$out")
    non2xx=$(awk '/Non-2xx/ {print $NF}' "$out")
    CPU_US=$(awk -v t=$((after - before)) -v hz="$HZ" -v n="$requests" 'BEGIN { printf "%.1f", (n > 0 ? t / hz / n * 1e6 : 0) }')
    # shellcheck disable=SC2059 # the format is ours
    ROW=$(printf "$ROW_FORMAT" "$name" "$rps" "$p50" "$p99" "${errors:-0}" "${non2xx:-0}" "$CPU_US")
    echo "  round $ROUND $name: $rps req/s, $CPU_US us CPU per request" >&2
}

# The peer: NGINX answering /fast itself (the cost of a request to a lean
# C server), running through the whole round and measured before the first
# server and after each one.
NGINX_PID="" NGINX_ADDR="" NGINX_US=""
start_nginx() {
    local port dir=$TMP/nginx
    port=$(free_port)
    mkdir -p "$dir"
    nginx_conf "$dir" "$port" "        location = /fast {
            default_type application/json;
            return 200 '{\"ok\": true}';
        }"
    env -u NGINX "${SERVER_CPU[@]}" "$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" >"$TMP/nginx.out" 2>"$TMP/err" &
    NGINX_PID=$!
    NGINX_ADDR=127.0.0.1:$port
    wait_http "$NGINX_ADDR"
}

stop_nginx() {
    kill -TERM "$NGINX_PID" 2>/dev/null || true
    wait "$NGINX_PID" 2>/dev/null || true
    NGINX_PID=""
}

measure_nginx() {
    measure nginx-static "$NGINX_ADDR" "$NGINX_PID"
    NGINX_US=$CPU_US
    ROWS+=("$ROW$(printf "$TAIL_FORMAT" peer "$ROUND")")
}

# Measures the server started last as "$1" at "$2", stops it, measures NGINX
# again, and records the server's row with its ratio to the mean of the
# NGINX figures before and after it.
bench() {
    local name=$1 addr=$2 before=$NGINX_US row cpu
    measure "$name" "$addr" "$SERVER_PID"
    row=$ROW cpu=$CPU_US
    stop_server
    ROWS+=("")
    local at=$((${#ROWS[@]} - 1)) ratio
    measure_nginx
    ratio=$(awk -v a="$cpu" -v b="$before" -v c="$NGINX_US" \
        'BEGIN { m = (b + c) / 2; printf "%.2fx", (m > 0 ? a / m : 0) }')
    # shellcheck disable=SC2059 # the format is ours
    ROWS[at]="$row$(printf "$TAIL_FORMAT" "$ratio" "$ROUND")"
}

run_slowlab() {
    run_binary "$SLOWLAB" "$@"
}

# Like run_slowlab, with the binary "$1" first.
run_binary() {
    local bin=$1 name=$2; shift 2
    # One file per server, removed first: the redirection of a background
    # job happens later, so an old file (another server's, or this one's in
    # the previous round) could still show an old line.
    rm -f "$TMP/out-$name"
    "${SERVER_CPU[@]}" "$bin" serve --listen 127.0.0.1:0 "$@" >"$TMP/out-$name" 2>"$TMP/err" &
    SERVER_PID=$!
    local addr
    addr=$(ready_addr "$TMP/out-$name")
    bench "$name" "$addr"
}

run_gunicorn() {
    local port
    port=$(free_port)
    "${SERVER_CPU[@]}" "$GUNICORN" --workers 2 --worker-class sync --bind "127.0.0.1:$port" \
        --chdir "$ROOT/lab/python" slowlab_app:application >"$TMP/out" 2>"$TMP/err" &
    SERVER_PID=$!
    wait_http "127.0.0.1:$port"
    bench gunicorn-sync2 "127.0.0.1:$port"
}

echo "running wrk -t$WRK_THREADS -c$WRK_CONNS -d$WRK_DURATION --latency on /fast, $ROUNDS rounds ..." >&2
for ROUND in $(seq "$ROUNDS"); do
    start_nginx
    measure_nginx
    run_slowlab rust-sync2 --model sync --workers 2
    if [[ -n ${SLOWLAB_BASE:-} ]]; then run_binary "$SLOWLAB_BASE" base-sync2 --model sync --workers 2; fi
    run_slowlab rust-threads4 --model threads --workers 4
    run_slowlab rust-async1 --model async --workers 1
    if [[ -n ${SLOWLAB_BASE:-} ]]; then run_binary "$SLOWLAB_BASE" base-async1 --model async --workers 1; fi
    run_slowlab "rust-async$CORES" --model async
    if ((HAVE_GUNICORN)); then run_gunicorn; fi
    stop_nginx
done

echo
echo "GET /fast, wrk -t$WRK_THREADS -c$WRK_CONNS -d$WRK_DURATION --latency -H 'Connection: close', new connection per request"
echo "$(uname -sr), $CORES cores, load average $(cut -d' ' -f1-3 /proc/loadavg)," \
    "$( ((HAVE_GUNICORN)) && "$GUNICORN" --version 2>&1 | head -1), $("$NGINX" -v 2>&1 | sed 's/.*: //'), $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)"
echo "cpu_us_per_req: the server's utime+stime over the run / requests; vs_nginx: against the mean of the nginx-static rows just before and after"
# shellcheck disable=SC2059 # the format is ours
printf "$ROW_FORMAT$TAIL_FORMAT\n" server "requests/s" p50 p99 "sock err" "non-2xx" \
    cpu_us_per_req vs_nginx round
printf '%s\n' "${ROWS[@]}"
echo
echo "median over $ROUNDS rounds (the rows above), with the lowest-highest CPU per request and ratio"
printf '%s\n' "${ROWS[@]}" | median_table 1 2 7 8
