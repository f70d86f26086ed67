# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_slowlab_global_optspecs
    string join \n h/help V/version
end

function __fish_slowlab_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_slowlab_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_slowlab_using_subcommand
    set -l cmd (__fish_slowlab_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c slowlab -n "__fish_slowlab_needs_command" -s h -l help -d 'Print help'
complete -c slowlab -n "__fish_slowlab_needs_command" -s V -l version -d 'Print version'
complete -c slowlab -n "__fish_slowlab_needs_command" -f -a "serve" -d 'Serve the Rust replica of the experiment\'s app'
complete -c slowlab -n "__fish_slowlab_needs_command" -f -a "proxy" -d 'Run the pingora reverse proxy with NGINX-like buffering'
complete -c slowlab -n "__fish_slowlab_needs_command" -f -a "load" -d 'Run slow readers and the open-loop /fast client against a target'
complete -c slowlab -n "__fish_slowlab_needs_command" -f -a "prepare" -d 'Install or find Gunicorn 23.0.0 and NGINX 1.22 for the real conditions'
complete -c slowlab -n "__fish_slowlab_needs_command" -f -a "reproduce" -d 'Run the experiment\'s condition matrix, capped and sampled'
complete -c slowlab -n "__fish_slowlab_needs_command" -f -a "report" -d 'Write the HTML and Markdown report of a results directory'
complete -c slowlab -n "__fish_slowlab_needs_command" -f -a "merge" -d 'Merge results directories (shards of one matrix, other machines) into one'
complete -c slowlab -n "__fish_slowlab_needs_command" -f -a "sweep" -d 'Step the request rate to saturation against one stack'
complete -c slowlab -n "__fish_slowlab_needs_command" -f -a "sweep-load" -d 'The load generator of one rate sweep (run by `slowlab sweep`)'
complete -c slowlab -n "__fish_slowlab_needs_command" -f -a "check" -d 'Check how many slow downloads your server survives, direct and behind a proxy'
complete -c slowlab -n "__fish_slowlab_needs_command" -f -a "generate" -d 'Write the man pages, a shell\'s completions or the book\'s command reference'
complete -c slowlab -n "__fish_slowlab_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c slowlab -n "__fish_slowlab_using_subcommand serve" -l listen -d 'Address to listen on (IP:port); port 0 picks a free one. Outside 127.0.0.0/8 and ::1 only with --allow-remote' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand serve" -l model -d 'Worker model' -r -f -a "sync\t'N workers, each serving one connection at a time from accept to close'
threads\t'One acceptor and a pool of N handlers (like Gunicorn gthread)'
async\t'A tokio multi-thread runtime, one task per connection'"
complete -c slowlab -n "__fish_slowlab_using_subcommand serve" -l workers -d 'Workers (sync), handlers (threads) or runtime threads (async; default: the number of cores); 1 to 1024' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand serve" -l large-bytes -d 'Size of the /large body (0 to 64GiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand serve" -l chunk-bytes -d 'Size of each block written for /large (1 to 16MiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand serve" -l send-log -d 'Append one CSV row per /large response to this file' -r -F
complete -c slowlab -n "__fish_slowlab_using_subcommand serve" -l recv-log -d 'Append one CSV row per POST /upload to this file' -r -F
complete -c slowlab -n "__fish_slowlab_using_subcommand serve" -l worker-timeout -d 'Sync model only, Gunicorn\'s `--timeout`: a worker still on one connection this long after accepting it is aborted, answering a best-effort 500 and closing; 0s never (0s to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand serve" -l allow-remote -d 'Allow a --listen address outside 127.0.0.0/8 and ::1'
complete -c slowlab -n "__fish_slowlab_using_subcommand serve" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c slowlab -n "__fish_slowlab_using_subcommand serve" -s V -l version -d 'Print version'
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l listen -d 'Address to listen on (IP:port); port 0 picks a free one' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l upstream -d 'The upstream server (IP:port)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l buffering -d 'proxy_buffering' -r -f -a "on\t''
off\t''"
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l buffer-size -d 'proxy_buffer_size: the first part of the response (1 to 64MiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l buffers -d 'proxy_buffers, as COUNTxSIZE (2 to 1024 buffers of 1 to 64MiB, at most 1GiB with --buffer-size)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l busy-buffers-size -d 'proxy_busy_buffers_size (1 to 64MiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l max-temp-file-size -d 'proxy_max_temp_file_size per response; 0 disables spilling' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l temp-file-write-size -d 'proxy_temp_file_write_size (1 to 64MiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l temp-path -d 'proxy_temp_path (default: the system\'s temp directory)' -r -F
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l threads -d 'Worker threads (1 to 1024)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l read-timeout -d 'proxy_read_timeout (1ms to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l send-timeout -d 'proxy_send_timeout (1ms to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l stats-log -d 'Append one CSV row per response to this file' -r -F
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l gauge-log -d 'Append one CSV row per open response every --gauge-interval' -r -F
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l gauge-interval -d 'Sampling interval of --gauge-log (1ms to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l request-buffering -d 'proxy_request_buffering: `on` reads the whole request body before connecting upstream; `off` (the default here, unlike NGINX\'s) streams it. A chunked body is read whole either way' -r -f -a "on\t''
off\t''"
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l client-body-buffer-size -d 'client_body_buffer_size: the request body in memory, beyond it a temp file (1 to 64MiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l client-max-body-size -d 'client_max_body_size: longer request bodies get 413; 0 disables the check (0 to 1024GiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l client-header-timeout -d 'client_header_timeout: the whole request head within this time of the accept, else the connection is closed (1ms to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l client-body-timeout -d 'client_body_timeout: the longest wait between two request body reads (1ms to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l keepalive-timeout -d 'keepalive_timeout: how long a client connection waits idle for its next request; 0 closes every connection after its response (0 to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l keepalive-requests -d 'keepalive_requests: the most requests one client connection serves (1 to 1000000)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l keepalive-time -d 'keepalive_time: a request that starts on a connection older than this is its last (1ms to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l worker-connections -d 'worker_connections: client and upstream connections held at once per thread, the listening socket\'s included; beyond it idle kept-open connections are closed, then new clients (2 to 1000000)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l tls-cert -d 'Terminate TLS towards the clients with this certificate chain (PEM; with --tls-key), as NGINX\'s `listen ... ssl`' -r -F
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l tls-key -d 'The private key of --tls-cert (PEM)' -r -F
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l allow-remote -d 'Allow --listen and --upstream addresses outside 127.0.0.0/8 and ::1'
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -l http2 -d 'Offer HTTP/2 in ALPN (needs --tls-cert), as NGINX\'s `listen ... ssl http2`: each stream is proxied as its own request to the HTTP/1.0 upstream, with the same buffering'
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -s h -l help -d 'Print help'
complete -c slowlab -n "__fish_slowlab_using_subcommand proxy" -s V -l version -d 'Print version'
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l target -d 'Base URL of the server, e.g. http://127.0.0.1:8000, or https://127.0.0.1:8443 for TLS (with --tls-ca or --tls-insecure)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l slow -d 'Number of slow readers of the large path (0 to 25000)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l slow-rate -d 'Read rate of each slow reader, bytes per second (1 to 10GiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l rcvbuf -d 'SO_RCVBUF requested for slow readers before connect (0 to 1GiB; 0 leaves it to the kernel, autotuned up to tcp_rmem max). Not for an HTTP/2 connection, whose slow readers are their --h2-window: it keeps the kernel\'s buffer' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l read-chunk -d 'Largest single read of a slow reader (1 to 1MiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l large-path -d 'Path the slow readers download' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l reader -d 'How a slow reader reads: strict = one recv of at most --read-chunk at each pacing deadline; streamreader = asyncio\'s StreamReader with limit --read-chunk (the socket drained into a user-space buffer while it holds at most 2 x --read-chunk, the application paced)' -r -f -a "strict\t'One `recv` of at most `--read-chunk` when the pacing deadline comes: between reads the bytes wait in the kernel\'s receive queue'
streamreader\t'asyncio\'s `StreamReader` (limit `--read-chunk`) as the original\'s client used it: the transport drains the socket into a user-space buffer whenever reading is not paused, the application takes up to `--read-chunk` from it at the paced rate (see `streamreader`)'"
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l loop-lag -d 'streamreader only: how long the modelled event loop takes from the socket\'s readiness to its recv, spent on the CPU as an interpreter spends it (0s to 100ms; 0s, the default, receives at once). CPython\'s own is printed by lab/python/slowlab_reference_reader.py as loop_lag_us_median; see the book, "The load generator and the reader models"' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l slow-upload -d 'Number of slow uploaders that POST the upload path (0 to 25000)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l upload-path -d 'Path the slow uploaders POST' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l upload-bytes -d 'Body size of each upload, the pattern with Content-Length (0 to 64GiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l upload-rate -d 'Send rate of each slow uploader, bytes per second (1 to 10GiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l sndbuf -d 'SO_SNDBUF requested for slow uploaders before connect (0 to 1GiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l slow-headers -d 'Number of slowloris clients: each sends a request head one header line per --header-interval and never finishes it (0 to 25000)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l header-interval -d 'Time between two header lines of a slowloris client (1ms to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l upload-ok -d 'The answers that make an upload ok once all its bytes are sent: statuses and classes, comma-separated (`2xx`, `200,201`, `2xx,303`). An answer that is the lab\'s JSON (`{"bytes": N, "pattern_ok": B}`) is checked too' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l fast-bind -d 'Bind every /fast socket (load: the /fast client; sweep-load: its sessions) to this local address before connect (loopback, or the lab\'s range inside a lab namespace, unless --allow-remote). The harness sets it in its namespaces, so that /fast takes the unshaped veth pair' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l slow-bind -d 'Bind slow client i (the i-th slow reader, uploader and slowloris client, counted from 0) to this address plus i, so that each sits behind its own per-client link (loopback, or the lab\'s range inside a lab namespace, unless --allow-remote; every address up to the last client\'s is checked). The harness sets it with --link ...,per=client' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l h2-window -d '--http2: each stream\'s flow-control window, the SETTINGS_INITIAL_WINDOW_SIZE the load sends; a slow reader refills it at --slow-rate (1 to 2147483647)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l h2-conn-window -d '--http2: the connection\'s flow-control window, shared by its streams (65535 to 2147483647). By default the sum of its streams\' windows (--h2-window x --streams-per-conn, at least 65535), so that each stream is held back by its own window, not by its siblings\': a connection window of 65535 for 8 streams paced at 2MiB/s made them take 21 s instead of 8' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l streams-per-conn -d '--http2: slow downloads carried by one connection; --slow counts downloads, so --slow 8 --streams-per-conn 8 is one connection of 8 streams (1 to 1000)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l tls-ca -d 'An https:// target\'s certificate is verified against the certificate authorities in this PEM file (the lab\'s runs make one per run)' -r -F
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l fast-rate -d '/fast requests per second (0 to 10000; at most 1000000 requests in all)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l fast-duration -d 'How long /fast requests are sent (0s to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l fast-start -d 'Delay between the slow readers\' start and the first /fast request (0s to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l fast-settle -d 'Start the /fast schedule only once the slow readers have settled: every reader has its response\'s first byte (or has ended), or none got one for this long; never later than --timeout after the start. A server that takes its readers one by one (an event loop writing the first chunk of each) is measured once it holds them all, not during the connect burst the tester made. summary.json says when the schedule began and why. 0s: at --fast-start (0s to 1min)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l fast-path -d 'Path of the fast requests' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l timeout -d 'Give up on a /fast request this long after its start; a slow reader gives up when a connect, write or read makes no progress for this long (1ms to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l out -d 'Directory for requests.csv, large-responses.csv, slow-progress.csv, latency.hgrm and summary.json (created if missing)' -r -F
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l label -d 'Identity column added to every CSV row (key=value; repeatable)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l verify -d 'How slow readers check the body: auto = every byte against the pattern when the server sends X-Slowlab-Block, else the length' -r -f -a "auto\t'Every byte against the pattern when the server sends `X-Slowlab-Block` (ours do), otherwise only the length'
pattern\t'Every byte against the pattern (block size from `X-Slowlab-Block`, else 64 KiB)'
length\t'Only the length against `Content-Length`'"
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l spin -d 'Wake this long before each /fast start and busy-wait the rest, so a late timer wake-up (idle VM CPUs) cannot delay it. Costs that much CPU per request; under a CPU quota use it with --realtime (0s to 1s)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l http2 -d 'Speak HTTP/2 (slow readers and /fast): ALPN h2 to an https:// target, prior-knowledge h2c to an http:// one. A target that does not speak it is refused with one line before the run'
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l tls-insecure -d 'An https:// target\'s certificate is not verified at all (a self-signed test server\'s)'
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l json -d 'Print the summary as one JSON object'
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l allow-remote -d 'Allow targets outside 127.0.0.0/8 and ::1'
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l realtime -d 'Run the thread that starts /fast requests as SCHED_FIFO (needs root, and cpu.rt_runtime_us in a cgroup v1 child); falls back to the default tuning otherwise. summary.json says which took effect'
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -l end-with-fast -d 'End the run with its last /fast request: slow clients still running then are cut (their rows\' error says `cut`), so the run lasts --fast-start + --fast-duration and the last answer, however long the slow transfers would take. `slowlab check` ends every level so'
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c slowlab -n "__fish_slowlab_using_subcommand load" -s V -l version -d 'Print version'
complete -c slowlab -n "__fish_slowlab_using_subcommand prepare" -l state-dir -d 'Directory for the venv and unpacked packages (default: $SLOWLAB_HOME, else .slowlab in the binary\'s checkout, else ~/.local/share/slowlab)' -r -F
complete -c slowlab -n "__fish_slowlab_using_subcommand prepare" -s h -l help -d 'Print help'
complete -c slowlab -n "__fish_slowlab_using_subcommand prepare" -s V -l version -d 'Print version'
complete -c slowlab -n "__fish_slowlab_using_subcommand reproduce" -l preset -d 'Which matrix to run; without it, `seed` then `replica`' -r -f -a "seed\t'Exactly the original\'s 30 runs (Gunicorn, NGINX)'
replica\t'The same matrix with rust-sync2 and pingora, plus rust-threads4'
cross\t'Every server x every route at 0 and 2 slow connections'
quick\t'A few minutes: Gunicorn and the Rust replica, direct and behind their proxy with buffering on and off, at 0 and 2 slow, shortened'
servers\t'Every server (Gunicorn\'s, the Rust replicas\', Uvicorn, Waitress, Granian) direct at 0, 2 and 8 slow connections: which servers block'
upload\t'The request direction: Gunicorn sync x2 and rust-sync2, direct and behind their proxy with request buffering off and on, at 0 and 2 slow uploaders'
headers\t'Slowloris: the same servers, direct and behind each proxy, at 0 and 2 clients that never finish their request head'
buffers\t'The kernel\'s buffers: Gunicorn sync x2 and rust-sync2, direct and behind their proxy with buffering off, 2 slow readers, across `tcp_wmem` max x `tcp_rmem` max of 256KiB, 1MiB, 4MiB and 16MiB in both namespaces and both reader models, plus each stack\'s 0-slow baseline in namespaces at the host\'s buffers; 2 repetitions, every condition at veth MTU 65535'
link\t'Slow links: Gunicorn sync x2 and rust-sync2, direct and behind their proxy with buffering off and on, at 0 and 2 slow clients that pace their reads or read unpaced behind a link at the paced rate (2MiB/s); 3 repetitions'
proxies\t'Which proxies protect a blocking app: Gunicorn sync x2 direct and behind every proxy route of the lab (NGINX, pingora, Caddy, HAProxy, Varnish, Apache, H2O, Squid and Traffic Server, each buffering and not where it can), at 0, 2 and 8 slow readers, and at 0, 2 and 8 slow uploaders behind each proxy\'s request routes; 3 repetitions'
h2\t'HTTP/2 and TLS at the edge: Gunicorn sync x2 and rust-sync2 behind every proxy of the lab that terminates TLS and HTTP/2 (NGINX, pingora, Caddy, HAProxy, Apache, H2O and Traffic Server), buffering and not where it can, with one slow connection carrying 1, 2 and 8 slow downloads as streams, two connections of one stream each, and no slow client; 3 repetitions'"
complete -c slowlab -n "__fish_slowlab_using_subcommand reproduce" -l runs -d 'Runs per condition (default: 3; quick: 1)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand reproduce" -l out -d 'Results directory (default: results/<UTC time>-<preset>/)' -r -F
complete -c slowlab -n "__fish_slowlab_using_subcommand reproduce" -l only -d 'Only conditions matching all of these comma-separated terms: server or route names, `slow=N`, `spc=N` (HTTP/2 streams per connection), and the others of the book\'s list (terms of one kind are alternatives)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand reproduce" -l shard -d 'Run only shard K of N of the plan (runs K, K+N, K+2N, ... keeping their ids), e.g. one Slurm array task or Kubernetes Indexed Job pod per shard; `slowlab merge` joins the shards\' directories' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand reproduce" -l sysctl -d 'A TCP sysctl written inside the run\'s namespaces, never on the host: `[server:|client:]net.ipv4.tcp_wmem="4096 16384 16777216"` (no side: both). Repeatable; implies --netns. Only per-namespace `net.ipv4.tcp_*` keys' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand reproduce" -l link -d 'A shaped server-to-client link: `rate=2MiB[,burst=SIZE][,limit=SIZE][,per=link|client]` (rate 8KiB to 1GiB per second; burst default 10 ms of the rate, at least 16KiB; limit default 100 ms, at least twice the burst). per=link (the default): one tbf on the server\'s veth end that all slow clients share; per=client: each slow client behind its own link of that rate (an htb class per client address). The slow readers read as fast as they can (slow-client kind `link`). Implies --netns' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand reproduce" -l mtu -d 'The MTU of the lab\'s veth pairs, 1280 to 65535 (default: the veth\'s 1500; the host\'s loopback has 65536). Implies --netns' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand reproduce" -l no-caps -d 'Run without CPU and memory caps (still accounted where cgroups work)'
complete -c slowlab -n "__fish_slowlab_using_subcommand reproduce" -l no-report -d 'Do not write the HTML/Markdown report at the end'
complete -c slowlab -n "__fish_slowlab_using_subcommand reproduce" -l netns -d 'Run the app and the proxy in a server network namespace and the load generator in a client namespace, joined by a veth pair on 198.18.0.0/15 (needs root and `ip`; otherwise the runs are skipped with one line)'
complete -c slowlab -n "__fish_slowlab_using_subcommand reproduce" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c slowlab -n "__fish_slowlab_using_subcommand reproduce" -s V -l version -d 'Print version'
complete -c slowlab -n "__fish_slowlab_using_subcommand report" -l open -d 'Open the HTML report in a browser afterwards'
complete -c slowlab -n "__fish_slowlab_using_subcommand report" -s h -l help -d 'Print help'
complete -c slowlab -n "__fish_slowlab_using_subcommand report" -s V -l version -d 'Print version'
complete -c slowlab -n "__fish_slowlab_using_subcommand merge" -l no-report -d 'Do not write the HTML/Markdown report of the merged directory'
complete -c slowlab -n "__fish_slowlab_using_subcommand merge" -s h -l help -d 'Print help'
complete -c slowlab -n "__fish_slowlab_using_subcommand merge" -s V -l version -d 'Print version'
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l server -d 'The server: gunicorn-sync2, gunicorn-gthread4, rust-sync2, rust-threads4 or rust-async' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l route -d 'The route: direct, nginx-off, nginx-on, pingora-off or pingora-on' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l low -d 'First connection rate (connections per second, 1 to 1000000)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l high -d 'Last connection rate (1 to 1000000)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l step -d 'Rate increment between steps (1 to 1000000)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l calls-per-conn -d 'Sequential /fast requests per connection (httperf --num-calls)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l step-duration -d 'How long each step sends (100ms to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l timeout -d 'A request unanswered after this long counts as an error (1ms to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l slow -d 'Slow readers of /large kept running during the whole sweep (0 to 25000)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l slow-upload -d 'Number of slow uploaders that POST the upload path (0 to 25000)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l upload-path -d 'Path the slow uploaders POST' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l upload-bytes -d 'Body size of each upload, the pattern with Content-Length (0 to 64GiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l upload-rate -d 'Send rate of each slow uploader, bytes per second (1 to 10GiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l sndbuf -d 'SO_SNDBUF requested for slow uploaders before connect (0 to 1GiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l slow-headers -d 'Number of slowloris clients: each sends a request head one header line per --header-interval and never finishes it (0 to 25000)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l header-interval -d 'Time between two header lines of a slowloris client (1ms to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l upload-ok -d 'The answers that make an upload ok once all its bytes are sent: statuses and classes, comma-separated (`2xx`, `200,201`, `2xx,303`). An answer that is the lab\'s JSON (`{"bytes": N, "pattern_ok": B}`) is checked too' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l out -d 'Results directory; several sweeps may share one (default: results/<UTC time>-sweep/)' -r -F
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l sysctl -d 'A TCP sysctl written inside the run\'s namespaces, never on the host: `[server:|client:]net.ipv4.tcp_wmem="4096 16384 16777216"` (no side: both). Repeatable; implies --netns. Only per-namespace `net.ipv4.tcp_*` keys' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l link -d 'A shaped server-to-client link: `rate=2MiB[,burst=SIZE][,limit=SIZE][,per=link|client]` (rate 8KiB to 1GiB per second; burst default 10 ms of the rate, at least 16KiB; limit default 100 ms, at least twice the burst). per=link (the default): one tbf on the server\'s veth end that all slow clients share; per=client: each slow client behind its own link of that rate (an htb class per client address). The slow readers read as fast as they can (slow-client kind `link`). Implies --netns' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l mtu -d 'The MTU of the lab\'s veth pairs, 1280 to 65535 (default: the veth\'s 1500; the host\'s loopback has 65536). Implies --netns' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l no-caps -d 'Run the server and proxy without CPU and memory caps'
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l keep-going -d 'Keep stepping after the server saturated (by default the sweep stops after two consecutive steps with more than 10% errors)'
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -l netns -d 'Run the app and the proxy in a server network namespace and the load generator in a client namespace, joined by a veth pair on 198.18.0.0/15 (needs root and `ip`; otherwise the runs are skipped with one line)'
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -s h -l help -d 'Print help'
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep" -s V -l version -d 'Print version'
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l target -d 'Base URL of the server, e.g. http://127.0.0.1:8000' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l rates -d 'Connection (session) rates per second, one step each, in order: e.g. 50,100,150' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l calls-per-conn -d 'Sequential requests per session (httperf --num-calls)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l step-duration -d 'How long each step starts sessions (its sending window; 100ms to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l timeout -d 'A request not answered whole this long after it began is an error (timeout), and its session ends (1ms to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l slow -d 'Slow readers of the large path, kept running during the whole sweep (0 to 25000)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l slow-rate -d 'Read rate of each slow reader, bytes per second (1 to 10GiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l rcvbuf -d 'SO_RCVBUF requested for slow readers before connect (0 to 1GiB; 0 leaves it to the kernel, autotuned up to tcp_rmem max). Not for an HTTP/2 connection, whose slow readers are their --h2-window: it keeps the kernel\'s buffer' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l read-chunk -d 'Largest single read of a slow reader (1 to 1MiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l large-path -d 'Path the slow readers download' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l reader -d 'How a slow reader reads: strict = one recv of at most --read-chunk at each pacing deadline; streamreader = asyncio\'s StreamReader with limit --read-chunk (the socket drained into a user-space buffer while it holds at most 2 x --read-chunk, the application paced)' -r -f -a "strict\t'One `recv` of at most `--read-chunk` when the pacing deadline comes: between reads the bytes wait in the kernel\'s receive queue'
streamreader\t'asyncio\'s `StreamReader` (limit `--read-chunk`) as the original\'s client used it: the transport drains the socket into a user-space buffer whenever reading is not paused, the application takes up to `--read-chunk` from it at the paced rate (see `streamreader`)'"
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l loop-lag -d 'streamreader only: how long the modelled event loop takes from the socket\'s readiness to its recv, spent on the CPU as an interpreter spends it (0s to 100ms; 0s, the default, receives at once). CPython\'s own is printed by lab/python/slowlab_reference_reader.py as loop_lag_us_median; see the book, "The load generator and the reader models"' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l slow-upload -d 'Number of slow uploaders that POST the upload path (0 to 25000)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l upload-path -d 'Path the slow uploaders POST' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l upload-bytes -d 'Body size of each upload, the pattern with Content-Length (0 to 64GiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l upload-rate -d 'Send rate of each slow uploader, bytes per second (1 to 10GiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l sndbuf -d 'SO_SNDBUF requested for slow uploaders before connect (0 to 1GiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l slow-headers -d 'Number of slowloris clients: each sends a request head one header line per --header-interval and never finishes it (0 to 25000)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l header-interval -d 'Time between two header lines of a slowloris client (1ms to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l upload-ok -d 'The answers that make an upload ok once all its bytes are sent: statuses and classes, comma-separated (`2xx`, `200,201`, `2xx,303`). An answer that is the lab\'s JSON (`{"bytes": N, "pattern_ok": B}`) is checked too' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l out -d 'Directory for steps.csv, and uploads.csv and slow-headers.csv with such clients (created if missing)' -r -F
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l fast-path -d 'Path of the sessions\' requests' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l fast-bind -d 'Bind every /fast socket (load: the /fast client; sweep-load: its sessions) to this local address before connect (loopback, or the lab\'s range inside a lab namespace, unless --allow-remote). The harness sets it in its namespaces, so that /fast takes the unshaped veth pair' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l slow-bind -d 'Bind slow client i (the i-th slow reader, uploader and slowloris client, counted from 0) to this address plus i, so that each sits behind its own per-client link (loopback, or the lab\'s range inside a lab namespace, unless --allow-remote; every address up to the last client\'s is checked). The harness sets it with --link ...,per=client' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l stop-when-saturated -d 'Stop after two consecutive steps with more than 10% failed requests (the steps done are written; exit status 0)'
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l allow-remote -d 'Allow targets outside 127.0.0.0/8 and ::1'
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -l json -d 'Print the summary as one JSON object'
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c slowlab -n "__fish_slowlab_using_subcommand sweep-load" -s V -l version -d 'Print version'
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l target -d 'URL of a server that already runs, e.g. http://127.0.0.1:8000 (loopback only unless --allow-remote)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l server -d 'One of the lab\'s own servers instead of yours (gunicorn-sync2, uvicorn, rust-sync2, ...; as `reproduce --only` names them), started as `reproduce` starts it; its large path is /large unless --large-path says otherwise' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l server-cmd -d 'Shell command that starts your server; slowlab fills in {host}, the address it must bind, and {port}, a port free there: 127.0.0.1; with --netns the command runs in the server namespace, and {host} is its 198.18.0.1 on the direct route, its own 127.0.0.1 behind a --through proxy. Its whole process group is stopped afterwards' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l server-dir -d 'Working directory of --server-cmd' -r -F
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l large-path -d 'A path that answers 200 with a large body (needed with --direction download, the default, except with --server, whose is /large); a body without a Content-Length (chunked, or ended by the close) is downloaded once to measure it' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l direction -d 'Which way the slow clients are slow: download (slow readers of --large-path), upload (slow uploaders that POST --upload-path) or headers (slowloris clients that never finish their request head)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l upload-path -d 'Path the slow uploaders POST' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l upload-bytes -d 'Body size of each upload, the pattern with Content-Length (0 to 64GiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l upload-rate -d 'Send rate of each slow uploader, bytes per second (1 to 10GiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l sndbuf -d 'SO_SNDBUF requested for slow uploaders before connect (0 to 1GiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l header-interval -d 'Time between two header lines of a slowloris client (1ms to 1day)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l upload-ok -d 'The answers that make an upload ok once all its bytes are sent: statuses and classes, comma-separated (`2xx`, `200,201`, `2xx,303`). An answer that is the lab\'s JSON (`{"bytes": N, "pattern_ok": B}`) is checked too' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l fast-path -d 'A quick path, called open-loop during every level' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l max-slow -d 'The most slow clients to try (1 to 25000)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l streams-per-conn -d 'Behind a --through route whose edge speaks HTTP/2 (the `-h2` routes): how many slow downloads share one connection, as streams (1 to 1000; a proxy runs at most 100 to 250 of them at once, and the rest wait); on every other route each has its own' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l slow-rate -d 'Read rate of each slow reader, bytes per second (1 to 10GiB); default: the lowest rate at which a reader still holds its handler at the end of a level (from the large path\'s size, the kernel\'s buffers and --level-duration), which costs the load generator least. Give your clients\' real rate to check at it' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l rcvbuf -d 'SO_RCVBUF requested for slow readers before connect (0 to 1GiB)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l reader -d 'How each slow reader reads: strict (one recv at each pacing deadline) or streamreader (asyncio\'s StreamReader, limit 16KiB), as `slowlab load --reader`' -r -f -a "strict\t'One `recv` of at most `--read-chunk` when the pacing deadline comes: between reads the bytes wait in the kernel\'s receive queue'
streamreader\t'asyncio\'s `StreamReader` (limit `--read-chunk`) as the original\'s client used it: the transport drains the socket into a user-space buffer whenever reading is not paused, the application takes up to `--read-chunk` from it at the paced rate (see `streamreader`)'"
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l fast-rate -d '/fast requests per second (0 to 10000); a level needs at least 10 of them in --level-duration for its p95' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l level-duration -d 'How long the fast path is called at each level (200ms to 10min)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l ready-timeout -d 'How long the server may take to answer its first request before the check gives up on it (1s to 10min): a server or proxy that slowlab starts, to answer --fast-path; any server, to begin its answer to the pre-flight\'s GET --large-path or POST --upload-path' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l noise-floor -d 'A level is held when its p95 is at most 10x the baseline or the baseline plus this, whichever is larger (0ms to 500ms): room for the scheduling noise of a busy machine' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l through -d 'Also check behind these proxy routes (comma-separated, or the flag repeated), each started by slowlab with the experiment\'s config: nginx-off, nginx-on, pingora-off, pingora-on, caddy, caddy-buf, haproxy, varnish, apache, apache-buf, h2o, squid, squid-buf, ats, ats-buf, and the same proxies terminating TLS and HTTP/2, their clients over TLS with HTTP/2: nginx-h2-off, nginx-h2-on, pingora-h2-off, pingora-h2-on, caddy-h2, caddy-h2-buf, haproxy-h2, apache-h2, apache-h2-buf, h2o-h2, ats-h2, ats-h2-buf; or a request-direction route (haproxy-reqbuf and varnish-reqbuf among them); with --direction upload or headers a route\'s buffering is request buffering (nginx-on is nginx-reqbuf-on, caddy-buf is caddy-reqbuf, ats-buf is ats-reqbuf)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l through-cmd -d 'Also check behind your own proxy with your own config: a shell command that starts it listening on {host}:{port} (a free port slowlab fills in) and forwarding to {upstream}, the server\'s IP:port. It is started, probed with --fast-path and stopped (its whole process group) as --server-cmd is, in the proxy\'s cgroup; its output goes to proxy.out and proxy.err' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l through-label -d 'What the --through-cmd route is called in the answer, check.csv and --gate (letters, digits, `-`, `_`; default `through-cmd`)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l gate -d 'The routes whose verdicts decide the exit status (comma-separated: direct, or its --label, and the --through routes); default: every route checked. A team that deploys behind a proxy gates on it and still sees direct' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l label -d 'What the route to the server itself is called in the answer and in check.csv (letters, digits, `-`, `_`; default `direct`, or `target` with --target)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l repeat -d 'How many times the boundary levels (the last one held and the first one denied) are measured, 1 to 10: the answer says how many agreed, and a boundary that does not repeat is a range' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l caps -d 'Cap the server\'s and the proxy\'s cgroups: app=CORES[/MEM],proxy=CORES[/MEM] (MEM defaults to the experiment\'s 128MiB and 96MiB), or `experiment`; loadgen=CORES[/MEM] caps the load generator too, to see what a starved tester looks like (its levels are inconclusive)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l out -d 'Results directory (default results/<UTC time>-check)' -r -F
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l sysctl -d 'A TCP sysctl written inside the run\'s namespaces, never on the host: `[server:|client:]net.ipv4.tcp_wmem="4096 16384 16777216"` (no side: both). Repeatable; implies --netns. Only per-namespace `net.ipv4.tcp_*` keys' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l link -d 'A shaped server-to-client link: `rate=2MiB[,burst=SIZE][,limit=SIZE][,per=link|client]` (rate 8KiB to 1GiB per second; burst default 10 ms of the rate, at least 16KiB; limit default 100 ms, at least twice the burst). per=link (the default): one tbf on the server\'s veth end that all slow clients share; per=client: each slow client behind its own link of that rate (an htb class per client address). The slow readers read as fast as they can (slow-client kind `link`). Implies --netns' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l mtu -d 'The MTU of the lab\'s veth pairs, 1280 to 65535 (default: the veth\'s 1500; the host\'s loopback has 65536). Implies --netns' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l slow-upload -d 'Number of slow uploaders that POST the upload path (0 to 25000)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l slow-headers -d 'Number of slowloris clients: each sends a request head one header line per --header-interval and never finishes it (0 to 25000)' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l json -d 'Print one JSON object on stdout instead of the words'
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l allow-remote -d 'Allow a --target outside 127.0.0.0/8 and ::1'
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -l netns -d 'Run the app and the proxy in a server network namespace and the load generator in a client namespace, joined by a veth pair on 198.18.0.0/15 (needs root and `ip`; otherwise the runs are skipped with one line)'
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c slowlab -n "__fish_slowlab_using_subcommand check" -s V -l version -d 'Print version'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and not __fish_seen_subcommand_from man completions reference proxy-config certificate help" -s h -l help -d 'Print help'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and not __fish_seen_subcommand_from man completions reference proxy-config certificate help" -s V -l version -d 'Print version'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and not __fish_seen_subcommand_from man completions reference proxy-config certificate help" -f -a "man" -d 'Man pages, one per verb (slowlab.1, slowlab-check.1, ...), into a directory: `slowlab generate man --out /usr/local/share/man/man1`'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and not __fish_seen_subcommand_from man completions reference proxy-config certificate help" -f -a "completions" -d 'The completion script of a shell, on stdout: `slowlab generate completions --shell bash > /etc/bash_completion.d/slowlab`'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and not __fish_seen_subcommand_from man completions reference proxy-config certificate help" -f -a "reference" -d 'The book\'s command reference (Markdown), on stdout'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and not __fish_seen_subcommand_from man completions reference proxy-config certificate help" -f -a "proxy-config" -d 'The config the lab writes for a route of a proxy from Debian\'s packages (caddy, caddy-buf, caddy-reqbuf, haproxy, haproxy-reqbuf, varnish, varnish-reqbuf, apache, apache-buf, h2o, squid, squid-buf, ats, ats-buf, ats-reqbuf, apache-reqbuf), written into --dir, and the shell line that starts it as a run does (its environment, one process), on stdout: `slowlab generate proxy-config --route haproxy --listen 127.0.0.1:8080 --upstream 127.0.0.1:8000 --dir /tmp/haproxy`. Both addresses must be loopback'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and not __fish_seen_subcommand_from man completions reference proxy-config certificate help" -f -a "certificate" -d 'A fresh certificate authority and a server certificate for localhost, 127.0.0.1 and ::1, signed by it, as a run makes for a proxy that terminates TLS: ca.pem, cert.pem and key.pem (mode 0600) into --dir; give the proxy cert.pem and key.pem, and `slowlab load` --tls-ca ca.pem. The key is new each time and never leaves --dir'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and not __fish_seen_subcommand_from man completions reference proxy-config certificate help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from man" -l out -d 'Directory the pages are written to (created if missing)' -r -F
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from man" -s h -l help -d 'Print help'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from man" -s V -l version -d 'Print version'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from completions" -l shell -d 'bash, zsh, fish, elvish or powershell' -r -f -a "bash\t''
elvish\t''
fish\t''
powershell\t''
zsh\t''"
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from completions" -s h -l help -d 'Print help'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from completions" -s V -l version -d 'Print version'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from reference" -s h -l help -d 'Print help'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from reference" -s V -l version -d 'Print version'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from proxy-config" -l route -d 'The route whose proxy and settings are written' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from proxy-config" -l listen -d 'Where the proxy listens' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from proxy-config" -l upstream -d 'Where it forwards to' -r
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from proxy-config" -l dir -d 'Directory the config (and Caddy\'s state) is written to (created if missing)' -r -F
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from proxy-config" -s h -l help -d 'Print help'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from proxy-config" -s V -l version -d 'Print version'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from certificate" -l dir -d 'Directory the files are written to (created if missing)' -r -F
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from certificate" -s h -l help -d 'Print help'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from certificate" -s V -l version -d 'Print version'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from help" -f -a "man" -d 'Man pages, one per verb (slowlab.1, slowlab-check.1, ...), into a directory: `slowlab generate man --out /usr/local/share/man/man1`'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from help" -f -a "completions" -d 'The completion script of a shell, on stdout: `slowlab generate completions --shell bash > /etc/bash_completion.d/slowlab`'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from help" -f -a "reference" -d 'The book\'s command reference (Markdown), on stdout'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from help" -f -a "proxy-config" -d 'The config the lab writes for a route of a proxy from Debian\'s packages (caddy, caddy-buf, caddy-reqbuf, haproxy, haproxy-reqbuf, varnish, varnish-reqbuf, apache, apache-buf, h2o, squid, squid-buf, ats, ats-buf, ats-reqbuf, apache-reqbuf), written into --dir, and the shell line that starts it as a run does (its environment, one process), on stdout: `slowlab generate proxy-config --route haproxy --listen 127.0.0.1:8080 --upstream 127.0.0.1:8000 --dir /tmp/haproxy`. Both addresses must be loopback'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from help" -f -a "certificate" -d 'A fresh certificate authority and a server certificate for localhost, 127.0.0.1 and ::1, signed by it, as a run makes for a proxy that terminates TLS: ca.pem, cert.pem and key.pem (mode 0600) into --dir; give the proxy cert.pem and key.pem, and `slowlab load` --tls-ca ca.pem. The key is new each time and never leaves --dir'
complete -c slowlab -n "__fish_slowlab_using_subcommand generate; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c slowlab -n "__fish_slowlab_using_subcommand help; and not __fish_seen_subcommand_from serve proxy load prepare reproduce report merge sweep sweep-load check generate help" -f -a "serve" -d 'Serve the Rust replica of the experiment\'s app'
complete -c slowlab -n "__fish_slowlab_using_subcommand help; and not __fish_seen_subcommand_from serve proxy load prepare reproduce report merge sweep sweep-load check generate help" -f -a "proxy" -d 'Run the pingora reverse proxy with NGINX-like buffering'
complete -c slowlab -n "__fish_slowlab_using_subcommand help; and not __fish_seen_subcommand_from serve proxy load prepare reproduce report merge sweep sweep-load check generate help" -f -a "load" -d 'Run slow readers and the open-loop /fast client against a target'
complete -c slowlab -n "__fish_slowlab_using_subcommand help; and not __fish_seen_subcommand_from serve proxy load prepare reproduce report merge sweep sweep-load check generate help" -f -a "prepare" -d 'Install or find Gunicorn 23.0.0 and NGINX 1.22 for the real conditions'
complete -c slowlab -n "__fish_slowlab_using_subcommand help; and not __fish_seen_subcommand_from serve proxy load prepare reproduce report merge sweep sweep-load check generate help" -f -a "reproduce" -d 'Run the experiment\'s condition matrix, capped and sampled'
complete -c slowlab -n "__fish_slowlab_using_subcommand help; and not __fish_seen_subcommand_from serve proxy load prepare reproduce report merge sweep sweep-load check generate help" -f -a "report" -d 'Write the HTML and Markdown report of a results directory'
complete -c slowlab -n "__fish_slowlab_using_subcommand help; and not __fish_seen_subcommand_from serve proxy load prepare reproduce report merge sweep sweep-load check generate help" -f -a "merge" -d 'Merge results directories (shards of one matrix, other machines) into one'
complete -c slowlab -n "__fish_slowlab_using_subcommand help; and not __fish_seen_subcommand_from serve proxy load prepare reproduce report merge sweep sweep-load check generate help" -f -a "sweep" -d 'Step the request rate to saturation against one stack'
complete -c slowlab -n "__fish_slowlab_using_subcommand help; and not __fish_seen_subcommand_from serve proxy load prepare reproduce report merge sweep sweep-load check generate help" -f -a "sweep-load" -d 'The load generator of one rate sweep (run by `slowlab sweep`)'
complete -c slowlab -n "__fish_slowlab_using_subcommand help; and not __fish_seen_subcommand_from serve proxy load prepare reproduce report merge sweep sweep-load check generate help" -f -a "check" -d 'Check how many slow downloads your server survives, direct and behind a proxy'
complete -c slowlab -n "__fish_slowlab_using_subcommand help; and not __fish_seen_subcommand_from serve proxy load prepare reproduce report merge sweep sweep-load check generate help" -f -a "generate" -d 'Write the man pages, a shell\'s completions or the book\'s command reference'
complete -c slowlab -n "__fish_slowlab_using_subcommand help; and not __fish_seen_subcommand_from serve proxy load prepare reproduce report merge sweep sweep-load check generate help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c slowlab -n "__fish_slowlab_using_subcommand help; and __fish_seen_subcommand_from generate" -f -a "man" -d 'Man pages, one per verb (slowlab.1, slowlab-check.1, ...), into a directory: `slowlab generate man --out /usr/local/share/man/man1`'
complete -c slowlab -n "__fish_slowlab_using_subcommand help; and __fish_seen_subcommand_from generate" -f -a "completions" -d 'The completion script of a shell, on stdout: `slowlab generate completions --shell bash > /etc/bash_completion.d/slowlab`'
complete -c slowlab -n "__fish_slowlab_using_subcommand help; and __fish_seen_subcommand_from generate" -f -a "reference" -d 'The book\'s command reference (Markdown), on stdout'
complete -c slowlab -n "__fish_slowlab_using_subcommand help; and __fish_seen_subcommand_from generate" -f -a "proxy-config" -d 'The config the lab writes for a route of a proxy from Debian\'s packages (caddy, caddy-buf, caddy-reqbuf, haproxy, haproxy-reqbuf, varnish, varnish-reqbuf, apache, apache-buf, h2o, squid, squid-buf, ats, ats-buf, ats-reqbuf, apache-reqbuf), written into --dir, and the shell line that starts it as a run does (its environment, one process), on stdout: `slowlab generate proxy-config --route haproxy --listen 127.0.0.1:8080 --upstream 127.0.0.1:8000 --dir /tmp/haproxy`. Both addresses must be loopback'
complete -c slowlab -n "__fish_slowlab_using_subcommand help; and __fish_seen_subcommand_from generate" -f -a "certificate" -d 'A fresh certificate authority and a server certificate for localhost, 127.0.0.1 and ::1, signed by it, as a run makes for a proxy that terminates TLS: ca.pem, cert.pem and key.pem (mode 0600) into --dir; give the proxy cert.pem and key.pem, and `slowlab load` --tls-ca ca.pem. The key is new each time and never leaves --dir'
