#!/usr/bin/env bash
# Counts the user-space instructions each server executes per request,
# with valgrind's callgrind, for the same servers as
# scripts/bench-syscalls.sh: NGINX's static `return 200`, `slowlab serve`
# (async 1 worker, sync 2 workers), NGINX's proxy and `slowlab proxy
# --threads 1` (buffering off and on) in front of `slowlab serve --model
# async --workers 1` (not traced, on CPU 0).
#
# A count of instructions is the same from run to run on this noisy VM,
# where CPU time per request moves by 10 % between rounds: it is the
# measure to decide a small change of the user-space code by. It is not
# the time: the kernel's part (about 80 % of a proxy's CPU here, see
# scripts/bench-syscalls.sh) and cache misses are not in it, and callgrind
# counts every byte of a `rep movsb`/`rep stosb` as an instruction (glibc's
# memcpy and memset use them from a few KiB up: a 16 KiB memset counts
# 16,384, and takes a few hundred cycles). scripts/bench-proxy.sh and
# scripts/bench-serve.sh give the time.
#
# Each server runs under callgrind twice, answering N1 and then N2
# requests from one client that sends them one after the other (GET
# /fast, a new connection per request with `Connection: close`, or one
# connection for all with KEEPALIVE=1, the proxies then keeping it open:
# NGINX with keepalive_timeout 75s; the servers, NGINX's static `return
# 200` too, still close after each answer, and the client then opens a
# new one, as wrk does in scripts/bench-syscalls.sh); the count per request is the
# difference of the two totals divided by N2 - N1, so that start-up and
# shutdown cancel out. Every thread of the process is counted (pingora's
# timer thread too).
#
# Usage: scripts/bench-instructions.sh     (N1=200 N2=1200 KEEPALIVE=0 FLOOR=0)
# Environment: SLOWLAB, NGINX as for scripts/bench-proxy.sh; SLOWLAB_BASE
# (an older slowlab binary: its proxy is counted too, as base-pingora-MODE),
# FLOOR (1: the floors of proxy/examples/floor.rs too, against nginx-on:
# tokio-floor, a proxy's socket work on tokio and nothing else, and
# pingora-floor, that with pingora's HTTP/1 session; the least a proxy
# built on each executes; not with KEEPALIVE=1).
# Prints one table: the instructions per request, and each one's ratio to
# its NGINX peer (NGINX's static `return 200` for `serve`, NGINX's proxy in
# the same mode for `slowlab proxy`).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-nginx.sh
source scripts/bench-nginx.sh

N1=${N1:-200}
N2=${N2:-1200}
for v in N1 N2; do
    [[ ${!v} =~ ^[0-9]+$ ]] && ((${!v} >= 1 && ${!v} <= 100000)) ||
        { echo "bench-instructions: $v is a number of requests from 1 to 100000, not ${!v}" >&2; exit 2; }
done
((N2 > N1)) || { echo "bench-instructions: N2 ($N2) must be more than N1 ($N1)" >&2; exit 2; }
client_connections
floor_binary bench-instructions
bench_binaries bench-instructions
need_tool valgrind

# shellcheck source=scripts/bench-procs.sh
source scripts/bench-procs.sh

# client ADDR N: N requests for /fast, one after the other, each answer
# read whole before the next request goes.
client() {
    python3 - "$1" "$2" "${KEEPALIVE:-0}" <<'EOF'
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
n, keepalive = int(sys.argv[2]), sys.argv[3] == "1"
close = b"" if keepalive else b"Connection: close\r\n"
request = b"GET /fast HTTP/1.1\r\nHost: bench\r\n" + close + b"\r\n"
conn = None
for _ in range(n):
    if conn is None:
        conn = socket.create_connection((host, int(port)))
    conn.sendall(request)
    answer, closed = b"", False
    while True:
        data = conn.recv(65536)
        if not data:
            closed = True
            break
        answer += data
        head, sep, body = answer.partition(b"\r\n\r\n")
        if keepalive and sep:
            lines = [l.lower().replace(b" ", b"") for l in head.split(b"\r\n")]
            length = [l for l in lines if l.startswith(b"content-length:")]
            if length and len(body) >= int(length[0].split(b":")[1]):
                closed = b"connection:close" in lines
                break
    if not answer.startswith(b"HTTP/1.1 200"):
        sys.exit(f"bench-instructions: no 200 from {sys.argv[1]}: {answer[:80]!r}")
    if closed or not keepalive:
        conn.close()
        conn = None
EOF
}

# total_ir NAME N ARGS...: runs ARGS (a server on 127.0.0.1:$PORT) under
# callgrind on CPU 1, sends N requests once it answers, stops it, prints
# its instructions.
total_ir() {
    local name=$1 n=$2 out
    shift 2
    out="$work/$name.$n.callgrind"
    env -u NGINX taskset -c 1 valgrind --tool=callgrind --callgrind-out-file="$out" "$@" \
        >"$work/$name.out" 2>"$work/$name.err" &
    local pid=$!
    pids+=("$pid")
    # valgrind starts slowly. The requests of this wait come before N1's
    # and N2's alike.
    answers_fast "127.0.0.1:$PORT" 1200 || { kill -INT "$pid"; return 1; }
    client "127.0.0.1:$PORT" "$n" || { kill -INT "$pid"; return 1; }
    kill -INT "$pid"
    wait "$pid" || true
    awk '/^summary:/ { print $2 }' "$out"
}

rows=()
# count NAME PEER ARGS...: the instructions per request of ARGS; PEER is
# the row it is compared with ("-": none).
count() {
    local name=$1 peer=$2 a b
    shift 2
    a=$(total_ir "$name" "$N1" "$@")
    b=$(total_ir "$name" "$N2" "$@")
    [[ -n $a && -n $b ]] && ((b > a)) || { echo "bench-instructions: $name gave no count" >&2; cat "$work/$name.err" >&2; exit 1; }
    rows+=("$name $peer $(((b - a) / (N2 - N1)))")
    echo "  $name: $(((b - a) / (N2 - N1))) instructions per request" >&2
}

NGINX_KEEPALIVE_TIMEOUT=0 nginx_setup nginx-static "        location = /fast {
            default_type application/json;
            return 200 '{\"ok\": true}';
        }"
count nginx-static - "${NGINX_CMD[@]}"
for model in "async 1" "sync 2"; do
    set -- $model
    PORT=$(free_port)
    count "serve-$1$2" nginx-static "$SLOWLAB" serve --model "$1" --workers "$2" --listen "127.0.0.1:$PORT"
done

start_slowlab origin 0 serve --model async --workers 1 --listen 127.0.0.1:0
ORIGIN=$ADDR
for mode in off on; do
    NGINX_KEEPALIVE_TIMEOUT=$PROXY_KEEPALIVE_TIMEOUT nginx_setup "nginx-$mode" "$(proxy_location "$ORIGIN" "$mode")"
    count "nginx-$mode" - "${NGINX_CMD[@]}"
    for bin in "$SLOWLAB" ${SLOWLAB_BASE:+"$SLOWLAB_BASE"}; do
        name=pingora-$mode
        [[ $bin == "$SLOWLAB" ]] || name=base-pingora-$mode
        mkdir -p "$work/tmp-$name"
        PORT=$(free_port)
        count "$name" "nginx-$mode" "$bin" proxy --listen "127.0.0.1:$PORT" --upstream "$ORIGIN" \
            --buffering "$mode" --threads 1 --temp-path "$work/tmp-$name"
    done
    if [[ -n $FLOOR_BIN && $mode == on ]]; then
        for floor in tokio pingora; do
            PORT=$(free_port)
            count "$floor-floor" nginx-on "$FLOOR_BIN" "$floor" "127.0.0.1:$PORT" "$ORIGIN"
        done
    fi
done

if [[ ${KEEPALIVE:-0} == 1 ]]; then note="one connection for all, kept open by the proxies"; else note="Connection: close, a new connection per request"; fi
echo "# user-space instructions per request (callgrind; $N2 requests less $N1, one at a time; $note)"
{
    echo "component instructions_per_req vs_peer"
    for row in "${rows[@]}"; do
        set -- $row
        ratio=-
        if [[ $2 != - ]]; then
            for other in "${rows[@]}"; do
                read -r oname _ oir <<<"$other"
                [[ $oname == "$2" ]] && ratio=$(awk -v a="$3" -v b="$oir" 'BEGIN { printf "%.2fx", a / b }')
            done
        fi
        echo "$1 $3 $ratio"
    done
} | column -t
