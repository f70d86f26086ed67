#!/usr/bin/env bash
# Benchmarks `slowlab proxy` side by side with NGINX 1.22, one worker each,
# with the experiment's buffer configuration, in front of
# `slowlab serve --model async`:
#   - /fast p50 / p99 latency and requests/s through each proxy (wrk), and
#     the proxy process's CPU per request: its utime+stime increment over
#     the wrk run divided by the requests served, with the ratio to NGINX in
#     the same mode, measured just before and just after it (CPU per request
#     stays stabler than requests/s on a noisy machine, but a neighbour's
#     load still moves it, so the peer is measured on both sides);
#   - each proxy's RSS when idle and its peak RSS (VmHWM) while buffering two
#     concurrent 16 MiB downloads to slow readers (2 MiB/s, SO_RCVBUF 8 KiB);
#   - the same for the proxies from Debian's packages, each with the config
#     and command line a run gives it (`slowlab generate proxy-config`),
#     against the same NGINX: HAProxy, Caddy, Apache, Squid and Traffic
#     Server beside NGINX buffering off, Caddy with buffer_responses,
#     Varnish (pass), Apache with its raised FlushMaxThreshold, H2O, Squid
#     with its raised read_ahead_gap and Traffic Server with its raised
#     water mark beside NGINX buffering on
#     (HAProxy has no response buffering, H2O no streaming). A package
#     `slowlab prepare` could not fetch is skipped with one line.
#
# Usage: scripts/bench-proxy.sh
# Environment: SLOWLAB (binary; default: build release into $CARGO_TARGET_DIR
# or target/), NGINX (default: nginx on PATH, else
# .slowlab/nginx/usr/sbin/nginx as `slowlab prepare` installs it),
# WRK_DURATION (8s), WRK_CONNS (8), KEEPALIVE (0; 1: wrk keeps its
# connections open between requests, as the sweep's sessions do, instead of
# `Connection: close`; NGINX then keeps them too, keepalive_timeout 75s),
# PROXY_LOGS (0; 1: `slowlab proxy` writes its stats and gauge logs, as
# every run of the harness has it; NGINX's access log stays off, as in the
# lab's nginx.conf), SLOW_RATE (2MiB), ROUNDS (2: every proxy
# is started afresh and measured once per round), SLOWLAB_BASE (an older
# slowlab binary: its proxy is measured too in every round, as
# base-pingora-MODE right after pingora-MODE, against the same NGINX, so
# that a change is compared in one run), FLOOR (0; 1: with buffering on,
# the floors of proxy/examples/floor.rs too, as tokio-floor, a proxy's
# socket work on tokio and nothing else, and pingora-floor, that with
# pingora's HTTP/1 session: the least a proxy built on each costs; /fast
# only, no slow downloads; not with KEEPALIVE=1). After the rows of every
# round, a summary per component: the median over the rounds and the
# range. PACKAGED_OFF (default "haproxy caddy apache squid ats") and
# PACKAGED_ON (default "caddy-buf varnish apache-buf h2o squid-buf
# ats-buf"): the
# packaged proxies' routes measured in each mode;
# empty for none.
#
# CPU placement on a 2-core machine: each proxy alone on CPU 1; the origin,
# wrk and the slow readers share CPU 0. Every proxy gets the same treatment.
# Everything started here is killed on exit.

set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-nginx.sh
source scripts/bench-nginx.sh

WRK_DURATION=${WRK_DURATION:-8s}
ROUNDS=${ROUNDS:-2}
WRK_CONNS=${WRK_CONNS:-8}
SLOW_RATE=${SLOW_RATE:-2MiB}
PROXY_LOGS=${PROXY_LOGS:-0}
PACKAGED_OFF=${PACKAGED_OFF-haproxy caddy apache squid ats}
PACKAGED_ON=${PACKAGED_ON-caddy-buf varnish apache-buf h2o squid-buf ats-buf}
client_connections
floor_binary bench-proxy
bench_binaries bench-proxy
need_tool wrk

# shellcheck source=scripts/bench-procs.sh
source scripts/bench-procs.sh
# shellcheck source=scripts/bench-median.sh
source scripts/bench-median.sh

status_kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

# CPU ticks (utime+stime of every thread) of process $1: fields 14 and 15,
# counted after the parenthesised command name.
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
HZ=$(getconf CLK_TCK)

# fast_wrk PID ADDR: wrk against /fast at ADDR; sets OUT and CPU_US (CPU
# microseconds of PID per request served).
fast_wrk() {
    local pid=$1 addr=$2 before after
    before=$(cpu_ticks "$pid")
    OUT=$(taskset -c 0 wrk -t1 -c"$WRK_CONNS" -d"$WRK_DURATION" --latency "${WRK_HEADER[@]}" "http://$addr/fast")
    after=$(cpu_ticks "$pid")
    CPU_US=$(awk -v t=$((after - before)) -v hz="$HZ" -v n="$(awk '/requests in/ { print $1 }' <<<"$OUT")" \
        'BEGIN { printf "%.1f", (n > 0 ? t / hz / n * 1e6 : 0) }')
}

# wrk's latency with its unit (us, ms, s) in milliseconds.
to_ms() {
    awk '{ v = $1; if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 } printf "%.3f", v }'
}

# slow_downloads NAME ADDR: two concurrent slow readers of /large.
slow_downloads() {
    local name=$1 addr=$2
    if ! taskset -c 0 "$SLOWLAB" load --target "http://$addr" --slow 2 --slow-rate "$SLOW_RATE" \
        --fast-rate 1 --fast-duration 1s --out "$work/load-$name" >"$work/load-$name.log" 2>&1; then
        # Fallback without the load generator: curl has no SO_RCVBUF knob.
        taskset -c 0 curl -s --limit-rate 2M -o /dev/null "http://$addr/large" &
        local c1=$!
        taskset -c 0 curl -s --limit-rate 2M -o /dev/null "http://$addr/large" &
        local c2=$!
        wait "$c1" "$c2"
    fi
}

ROW_FORMAT='%-16s %9s %9s %10s %10s %12s %11s %8s %5s'
# row NAME IDLE PEAK RATIO: one table row from the last fast_wrk.
results=()
row() {
    local p50 p99 rps errors
    p50=$(awk '$1 == "50%" { print $2 }' <<<"$OUT" | to_ms)
    p99=$(awk '$1 == "99%" { print $2 }' <<<"$OUT" | to_ms)
    rps=$(awk '$1 == "Requests/sec:" { print $2 }' <<<"$OUT")
    errors=$(grep -E 'Non-2xx|Socket errors' <<<"$OUT" | tr -s ' ' | paste -sd';' - || true)
    # shellcheck disable=SC2059 # the format is ours
    results+=("$(printf "$ROW_FORMAT  %s" "$1" "$p50" "$p99" "$rps" "$2" "$3" "$CPU_US" "$4" "$round" "${errors:-}")")
    echo "  round $round $1: $rps req/s, $CPU_US us CPU per request ($4)" >&2
}

# measure NAME PID ADDR: RSS idle, the slow downloads' peak RSS, then /fast
# under wrk; sets IDLE, PEAK, OUT and CPU_US.
measure() {
    IDLE=$(status_kib "$2" VmRSS)
    slow_downloads "$1" "$3"
    PEAK=$(status_kib "$2" VmHWM)
    fast_wrk "$2" "$3"
}

# mode_round MODE: NGINX and pingora in MODE side by side, measured in the
# order NGINX, pingora, NGINX (then base-pingora, NGINX with SLOWLAB_BASE);
# a proxy's peer is the mean of the two NGINX figures around it, so that a
# neighbour's load that changes during the round weighs on both sides.
mode_round() {
    local mode=$1 ng_pid ng_addr before ng_idle ng_peak
    NGINX_KEEPALIVE_TIMEOUT=$PROXY_KEEPALIVE_TIMEOUT start_nginx "nginx-$mode-$round" "$(proxy_location "$ORIGIN" "$mode")"
    ng_pid=$PID ng_addr=$ADDR
    measure "nginx-$mode" "$ng_pid" "$ng_addr"
    ng_idle=$IDLE ng_peak=$PEAK before=$CPU_US
    row "nginx-$mode" "$ng_idle" "$ng_peak" peer
    pingora_then_nginx "pingora-$mode" "$SLOWLAB"
    if [[ -n ${SLOWLAB_BASE:-} ]]; then
        pingora_then_nginx "base-pingora-$mode" "$SLOWLAB_BASE"
    fi
    local packaged=$PACKAGED_OFF route
    [[ $mode == on ]] && packaged=$PACKAGED_ON
    for route in $packaged; do
        packaged_then_nginx "$route"
    done
    if [[ -n $FLOOR_BIN && $mode == on ]]; then
        floor_then_nginx tokio
        floor_then_nginx pingora
    fi
    kill "$ng_pid"
    wait "$ng_pid" 2>/dev/null || true
}

# pingora_then_nginx NAME BINARY (inside mode_round): BINARY's proxy in
# $mode measured and stopped, then NGINX again (then_nginx).
pingora_then_nginx() {
    local name=$1 bin=$2
    mkdir -p "$work/tmp-$name"
    local logs=()
    if [[ $PROXY_LOGS == 1 ]]; then
        logs=(--stats-log "$work/$name-$round-stats.csv" --gauge-log "$work/$name-$round-gauges.csv")
    fi
    SLOWLAB=$bin start_slowlab "$name-$round" 1 proxy --listen 127.0.0.1:0 --upstream "$ORIGIN" \
        --buffering "$mode" --threads 1 --temp-path "$work/tmp-$name" "${logs[@]}"
    measure "$name" "$PID" "$ADDR"
    then_nginx "$name" "$PID"
}

# packaged_then_nginx ROUTE (inside mode_round): the proxy of ROUTE from
# Debian's packages with the config and command line a run gives it
# (`slowlab generate proxy-config`), on CPU 1, measured and stopped, then
# NGINX again (then_nginx); skipped with one line when it cannot be had.
packaged_then_nginx() {
    local route=$1 port line dir="$work/$1-$round"
    port=$(free_port)
    if ! line=$("$SLOWLAB" generate proxy-config --route "$route" --listen "127.0.0.1:$port" \
        --upstream "$ORIGIN" --dir "$dir" 2>"$dir.gen"); then
        echo "$(basename "$0" .sh): $route skipped: $(tail -1 "$dir.gen")" >&2
        return
    fi
    taskset -c 1 bash -c "exec env $line" >"$dir.out" 2>"$dir.err" &
    PID=$!
    pids+=("$PID")
    answers_fast "127.0.0.1:$port" 200 ||
        { echo "$(basename "$0" .sh): $route did not start" >&2; cat "$dir.err" >&2; exit 1; }
    # Varnish's manager and Apache's parent fork the child that serves:
    # its CPU and memory are the child's (stopping the parent stops it).
    local worker
    worker=$(pgrep -n -P "$PID" || true)
    measure "$route" "${worker:-$PID}" "127.0.0.1:$port"
    then_nginx "$route" "$PID"
}

# floor_then_nginx tokio|pingora (inside mode_round): that floor
# ($FLOOR_BIN) on /fast alone, stopped, then NGINX again (then_nginx).
floor_then_nginx() {
    SLOWLAB=$FLOOR_BIN start_slowlab "$1-floor-$round" 1 "$1" 127.0.0.1:0 "$ORIGIN"
    IDLE=$(status_kib "$PID" VmRSS) PEAK=-
    fast_wrk "$PID" "$ADDR"
    then_nginx "$1-floor" "$PID"
}

# then_nginx NAME PID: after a proxy's measure (OUT, CPU_US, IDLE, PEAK),
# stops it and measures NGINX ($ng_pid) again; rows for both, the proxy's
# ratio against $before and the new NGINX figure, which becomes $before.
then_nginx() {
    local name=$1 pg_pid=$2
    local pg_out=$OUT pg_cpu=$CPU_US pg_idle=$IDLE pg_peak=$PEAK
    kill "$pg_pid"
    wait "$pg_pid" 2>/dev/null || true
    fast_wrk "$ng_pid" "$ng_addr"
    local after_out=$OUT after=$CPU_US
    OUT=$pg_out CPU_US=$pg_cpu
    row "$name" "$pg_idle" "$pg_peak" \
        "$(awk -v a="$pg_cpu" -v b="$before" -v c="$after" 'BEGIN { m = (b + c) / 2; printf "%.2fx", (m > 0 ? a / m : 0) }')"
    OUT=$after_out CPU_US=$after
    row "nginx-$mode" "$ng_idle" "$ng_peak" peer
    before=$after
}

start_slowlab origin 0 serve --model async --workers 1 --listen 127.0.0.1:0
ORIGIN=$ADDR
ORIGIN_PID=$PID

for round in $(seq "$ROUNDS"); do
    fast_wrk "$ORIGIN_PID" "$ORIGIN"
    row direct - - -
    for mode in off on; do
        mode_round "$mode"
    done
done

echo "# slowlab bench-proxy: $(uname -r), tcp_wmem=[$(sysctl -n net.ipv4.tcp_wmem | tr -s '\t ' ' ')]," \
    "tcp_rmem=[$(sysctl -n net.ipv4.tcp_rmem | tr -s '\t ' ' ')], $("$NGINX" -v 2>&1 | sed 's/.*: //')"
[[ $PROXY_LOGS == 1 ]] && echo "# slowlab proxy with --stats-log and --gauge-log (as the harness runs it)"
echo "# wrk -t1 -c$WRK_CONNS -d$WRK_DURATION --latency $WRK_CONN_NOTE /fast;" \
    "RSS in KiB; peak = VmHWM after two concurrent 16 MiB downloads at $SLOW_RATE"
echo "# cpu_us_per_req: the proxy's utime+stime over the wrk run / requests (direct: the origin's);" \
    "vs_nginx: against the mean of the NGINX rows just before and after, same mode; load average $(cut -d' ' -f1-3 /proc/loadavg)"
# shellcheck disable=SC2059 # the format is ours
printf "$ROW_FORMAT\n" proxy p50_ms p99_ms req_per_s rss_idle rss_peak cpu_us_per_req vs_nginx round
printf '%s\n' "${results[@]}"
echo "# median over $ROUNDS rounds (the rows above), with the lowest-highest CPU per request and ratio"
printf '%s\n' "${results[@]}" | median_table 1 4 7 8
