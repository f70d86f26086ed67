#!/usr/bin/env bash
# The pacing of HTTP/2 slow readers against HTTP/1.1 ones, in the same run:
# `slowlab serve --model async` behind one NGINX (buffering on) that
# listens in the clear (HTTP/1.1 readers) and with `ssl http2` (HTTP/2
# readers over TLS, the certificate from `slowlab generate certificate`),
# READERS slow readers of SIZE at RATE each way. Prints, per protocol, how
# far each reader's receive_s was from SIZE / RATE (median and worst, in
# percent; positive is late) and the load generator's CPU, and the ratio
# of the worst errors (h2 / http1). A benchmark, not a test.
#
#   scripts/bench-edge-pacing.sh                      # 16 and 128 readers
#   READERS="1024" SIZE=1MiB RATE=256KiB scripts/bench-edge-pacing.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench-nginx.sh
bench_binaries bench-edge-pacing
READERS=${READERS:-"16 128"} SIZE=${SIZE:-1MiB} RATE=${RATE:-256KiB}

dir=$(mktemp -d /tmp/slowlab-bench-edge.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM

app=$(free_port) plain=$(free_port) tls=$(free_port)
"$SLOWLAB" serve --listen "127.0.0.1:$app" --model async --large-bytes "$SIZE" >"$dir/serve.log" 2>&1 &
pids+=($!)
"$SLOWLAB" generate certificate --dir "$dir/cert" >/dev/null
mkdir -p "$dir/nginx"
nginx_conf "$dir/nginx" "$plain" "$(proxy_location "127.0.0.1:$app" on)
    }
    server {
        listen 127.0.0.1:$tls ssl http2;
        ssl_certificate $dir/cert/cert.pem;
        ssl_certificate_key $dir/cert/key.pem;
$(proxy_location "127.0.0.1:$app" on)"
env -u NGINX "$NGINX" -p "$dir/nginx" -c "$dir/nginx/nginx.conf" >"$dir/nginx.log" 2>&1 &
pids+=($!)
sleep 1

run() { # PROTOCOL N OUT
    local args=(--slow "$2" --slow-rate "$RATE" --fast-rate 0 --fast-duration 0s --timeout 60s --out "$3" --json)
    if [[ $1 == h2 ]]; then
        args+=(--target "https://127.0.0.1:$tls" --tls-ca "$dir/cert/ca.pem" --http2)
    else
        args+=(--target "http://127.0.0.1:$plain")
    fi
    "$SLOWLAB" load "${args[@]}" >"$3.json"
}

echo "readers of $SIZE at $RATE each, behind NGINX (buffering on) in front of serve --model async"
printf '%-8s %7s %10s %10s %9s %12s\n' protocol readers median_% worst_% failed loadgen_cores
for n in $READERS; do
    worst=()
    for proto in http1 h2; do
        out="$dir/$proto-$n"
        run "$proto" "$n" "$out"
        line=$(python3 - "$out" "$SIZE" "$RATE" <<'PY'
import csv, json, sys, re
out, size, rate = sys.argv[1:]
units = {"": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
def parse(v):
    m = re.fullmatch(r"(\d+)(\w*)", v)
    return int(m.group(1)) * units[m.group(2)]
ideal = parse(size) / parse(rate)
rows = list(csv.DictReader(open(out + "/large-responses.csv")))
errs = sorted((float(r["receive_s"]) - ideal) / ideal * 100 for r in rows if r["receive_s"])
failed = sum(1 for r in rows if r["error"])
cores = json.load(open(out + ".json"))["cpu"]["cores"]
med = errs[len(errs) // 2] if errs else float("nan")
worst = max(errs, key=abs) if errs else float("nan")
print(f"{med:.3f} {worst:.3f} {failed} {cores:.3f}")
PY
)
        read -r med w failed cores <<<"$line"
        printf '%-8s %7s %10s %10s %9s %12s\n' "$proto" "$n" "$med" "$w" "$failed" "$cores"
        worst+=("$w")
    done
    python3 -c "import sys; a,b=map(float,sys.argv[1:]); print(f'         worst-error ratio h2/http1 at $n readers: {abs(b)/abs(a) if a else float(\"inf\"):.2f}')" "${worst[0]}" "${worst[1]}"
done
