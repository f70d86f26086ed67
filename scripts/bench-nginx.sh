# Sourced by scripts/bench-proxy.sh, scripts/bench-serve.sh and
# scripts/bench-syscalls.sh: NGINX's configuration for the benches.
#
# free_port: prints a free TCP port on 127.0.0.1 (for NGINX, which cannot
# bind port 0 and tell us which one it got).
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

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
