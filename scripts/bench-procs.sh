# Sourced by scripts/bench-proxy.sh, scripts/bench-syscalls.sh and
# scripts/bench-instructions.sh (after scripts/bench-nginx.sh): the
# processes a bench starts, and their end.
#
# Sets `work` (a temp dir) and `pids`; every pid pushed to `pids` is killed,
# and `work` removed, on exit.
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# start_slowlab NAME CPU ARGS...: starts a slowlab verb ($SLOWLAB) on CPU,
# waits for its ready line, sets PID and ADDR.
start_slowlab() {
    local name=$1 cpu=$2
    shift 2
    taskset -c "$cpu" "$SLOWLAB" "$@" >"$work/$name.out" 2>"$work/$name.err" &
    PID=$!
    pids+=("$PID")
    for _ in $(seq 200); do
        if grep -q '^listening on ' "$work/$name.out" 2>/dev/null; then
            ADDR=$(sed -n 's/^listening on \([^ ]*\).*/\1/p' "$work/$name.out")
            return
        fi
        sleep 0.05
    done
    echo "$(basename "$0" .sh): $name did not start" >&2
    cat "$work/$name.err" >&2
    exit 1
}

# nginx_setup NAME LOCATIONS: NGINX's directory $work/NAME and its
# configuration with LOCATIONS (see nginx_conf) on a free port; sets PORT
# and NGINX_CMD, the command that runs it in the foreground (to be run
# under `env -u NGINX`: NGINX reads a variable of its own name, the
# sockets inherited on a binary upgrade).
nginx_setup() {
    local dir="$work/$1"
    PORT=$(free_port)
    mkdir -p "$dir"
    nginx_conf "$dir" "$PORT" "$2"
    NGINX_CMD=("$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log")
}

# answers_fast ADDR TRIES: waits, 0.05 s a try, until ADDR answers /fast;
# fails when it never does.
answers_fast() {
    for _ in $(seq "$2"); do
        curl -sf -o /dev/null "http://$1/fast" && return
        sleep 0.05
    done
    return 1
}

# start_nginx NAME LOCATIONS: NGINX ($NGINX) on CPU 1 with LOCATIONS (see
# nginx_conf) on a free port; sets PID and ADDR once it answers /fast.
start_nginx() {
    nginx_setup "$1" "$2"
    env -u NGINX taskset -c 1 "${NGINX_CMD[@]}" &
    PID=$!
    pids+=("$PID")
    ADDR=127.0.0.1:$PORT
    answers_fast "$ADDR" 200 && return
    echo "$(basename "$0" .sh): nginx $1 did not start" >&2
    cat "$work/$1/error.log" >&2
    exit 1
}
