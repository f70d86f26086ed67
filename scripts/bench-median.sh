# Sourced by scripts/bench-proxy.sh and scripts/bench-serve.sh: the summary
# over rounds that makes the noise between rounds visible.
#
# median_table NAME_COL RPS_COL CPU_COL RATIO_COL: reads the bench's table
# rows (whitespace-separated, one per component per run) on stdin and
# prints, per component in order of first appearance, how many runs it had,
# the median requests/s and CPU per request, the lowest and highest CPU per
# request, and the median and range of its ratio to the NGINX peer ("-"
# where it has none). An even number of runs takes the mean of the middle
# two.
median_table() {
    awk -v nc="$1" -v rc="$2" -v cc="$3" -v vc="$4" '
        function median(list,    a, n, i, j, t) {
            n = split(list, a, " ")
            for (i = 2; i <= n; i++) {
                t = a[i] + 0
                for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]
                a[j + 1] = t
            }
            lo = a[1]; hi = a[n]
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        NF >= vc {
            name = $nc
            if (!(name in runs)) order[++names] = name
            runs[name]++
            rps[name] = rps[name] " " $rc
            cpu[name] = cpu[name] " " $cc
            v = $vc
            if (v ~ /^[0-9.]+x$/) { sub(/x$/, "", v); ratio[name] = ratio[name] " " v }
        }
        END {
            printf "%-16s %4s %10s %14s %15s %8s %13s\n", "component", "runs", "req_per_s", "cpu_us_per_req",
                "cpu_us_range", "vs_nginx", "vs_range"
            for (i = 1; i <= names; i++) {
                n = order[i]
                r = median(rps[n])
                c = median(cpu[n]); crange = sprintf("%.1f-%.1f", lo, hi)
                if (ratio[n] != "") { m = sprintf("%.2fx", median(ratio[n])); vrange = sprintf("%.2f-%.2fx", lo, hi) }
                else { m = "-"; vrange = "-" }
                printf "%-16s %4d %10.0f %14.1f %15s %8s %13s\n", n, runs[n], r, c, crange, m, vrange
            }
        }'
}
