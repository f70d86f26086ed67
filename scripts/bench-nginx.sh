# Sourced by scripts/bench-proxy.sh and scripts/bench-serve.sh.
#
# nginx_conf DIR PORT LOCATIONS: writes DIR/nginx.conf for one NGINX worker
# in the foreground, every path inside DIR, no access log, no keep-alive
# (every response closes its connection, as the experiment's servers do),
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
    keepalive_timeout 0;
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
