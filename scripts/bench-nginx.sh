# Sourced by scripts/bench-proxy.sh, scripts/bench-serve.sh,
# scripts/bench-syscalls.sh and scripts/bench-instructions.sh: NGINX's
# configuration for the benches, the binaries and the tools they share.
#
# need_tool NAME [PACKAGE]: makes sure NAME is on PATH, installing the
# Debian package (default: NAME) when it is missing and we are root;
# otherwise exits with a one-line error.
need_tool() {
    local tool=$1 package=${2:-$1}
    command -v "$tool" >/dev/null && return
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        echo "$(basename "$0" .sh): installing $package for $tool" >&2
        apt-get install -y -q "$package" >/dev/null 2>&1 ||
            { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "$package" >/dev/null 2>&1; } || true
    fi
    command -v "$tool" >/dev/null ||
        { echo "$(basename "$0" .sh): $tool not found (apt-get install $package)" >&2; exit 1; }
}
#
# free_port: prints a free TCP port on 127.0.0.1 (for NGINX, which cannot
# bind port 0 and tell us which one it got).
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# bench_binaries NAME: the binaries a bench runs: SLOWLAB (default: the
# release build, built now, in $CARGO_TARGET_DIR or target/) and NGINX
# (default: nginx on PATH, else .slowlab/nginx/usr/sbin/nginx as `slowlab
# prepare` installs it); exits with a one-line error (NAME: ...) when there
# is no NGINX.
bench_binaries() {
    if [[ -z "${SLOWLAB:-}" ]]; then
        cargo build --release -q -p harness --bin slowlab
        SLOWLAB=${CARGO_TARGET_DIR:-target}/release/slowlab
    fi
    NGINX=${NGINX:-$(command -v nginx || echo .slowlab/nginx/usr/sbin/nginx)}
    [[ -x "$NGINX" ]] || { echo "$1: no nginx at $NGINX" >&2; exit 1; }
}

# floor_binary NAME: with FLOOR=1, builds proxy/examples/floor.rs (the
# least a proxy on tokio, and on pingora's HTTP/1 session, does for a
# request: scripts/bench-proxy.sh and scripts/bench-instructions.sh measure
# both beside `slowlab proxy`) and sets FLOOR_BIN; with FLOOR=0 (the
# default) sets it empty. Exits with a one-line error (NAME: ...) for any
# other FLOOR, or FLOOR=1 with KEEPALIVE=1: the floors close each
# connection after its answer.
floor_binary() {
    FLOOR_BIN=
    case ${FLOOR:-0} in
        0) return ;;
        1) ;;
        *) echo "$1: FLOOR is 0 or 1, not $FLOOR" >&2; exit 2 ;;
    esac
    [[ ${KEEPALIVE:-0} != 1 ]] ||
        { echo "$1: FLOOR=1 goes with a new connection per request (KEEPALIVE=0): the floors keep none open" >&2; exit 2; }
    cargo build --release -q -p proxy --example floor
    FLOOR_BIN=${CARGO_TARGET_DIR:-target}/release/examples/floor
}

# client_connections: how wrk's connections are used, from KEEPALIVE (0: a
# new connection per request, `Connection: close`; 1: connections reused,
# as the sweep's sessions do). Sets WRK_HEADER (wrk's extra arguments),
# WRK_CONN_NOTE (for the output's header) and PROXY_KEEPALIVE_TIMEOUT, the
# keepalive_timeout of NGINX as a proxy: with KEEPALIVE=1 it keeps client
# connections as `slowlab proxy` does (NGINX's default and the lab's, 75s,
# unless NGINX_KEEPALIVE_TIMEOUT says otherwise), else 0.
client_connections() {
    if [[ ${KEEPALIVE:-0} == 1 ]]; then
        WRK_HEADER=() WRK_CONN_NOTE="keep-alive: connections reused"
        PROXY_KEEPALIVE_TIMEOUT=${NGINX_KEEPALIVE_TIMEOUT:-75s}
    else
        WRK_HEADER=(-H 'Connection: close') WRK_CONN_NOTE="-H 'Connection: close' (a new connection per request)"
        PROXY_KEEPALIVE_TIMEOUT=${NGINX_KEEPALIVE_TIMEOUT:-0}
    fi
}

# nginx_conf DIR PORT LOCATIONS: writes DIR/nginx.conf for one NGINX worker
# in the foreground, every path inside DIR, no access log, no keep-alive
# (every response closes its connection, as the experiment's servers do)
# unless NGINX_KEEPALIVE_TIMEOUT says otherwise (see client_connections),
# listening on 127.0.0.1:PORT with LOCATIONS (nginx.conf text) in its server
# block.
nginx_conf() {
    local dir=$1 port=$2 locations=$3
    cat >"$dir/nginx.conf" <<EOF
master_process off;
daemon off;
worker_processes 1;
error_log $dir/error.log;
pid $dir/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    keepalive_timeout ${NGINX_KEEPALIVE_TIMEOUT:-0};
    client_body_temp_path $dir/client_body;
    proxy_temp_path $dir/proxy_temp;
    fastcgi_temp_path $dir/fastcgi_temp;
    uwsgi_temp_path $dir/uwsgi_temp;
    scgi_temp_path $dir/scgi_temp;
    server {
        listen 127.0.0.1:$port;
$locations
    }
}
EOF
}

# proxy_location UPSTREAM on|off: the location block of the experiment's
# NGINX proxy, buffering on or off, with its buffer configuration.
proxy_location() {
    echo "        location / {
            proxy_pass http://$1;
            proxy_buffering $2;
            proxy_buffer_size 16k;
            proxy_buffers 4 16k;
            proxy_busy_buffers_size 32k;
            proxy_max_temp_file_size 32m;
            proxy_temp_file_write_size 64k;
        }"
}
