# Sourced by the benchmarks that load nginx (bench/http-vs-wrk.sh, bench/h2-vs-h2load.sh,
# bench/before-after.sh).
#
# start_nginx DIR [h2c|h2]: a private nginx (one worker, pinned to core 1) serving the 13-byte
# file hello.txt from DIR on a free loopback port — HTTP/1.1, or with h2c HTTP/2 in the clear
# (prior knowledge; url is then h2c://…); h2 is h2c and also HTTP/2 over TLS on a second port
# (tls_url, https://…, h2 offered by ALPN; a self-signed certificate made in DIR with openssl).
# Sets nginx_pid, port and url, and returns once it accepts connections. stop_nginx: stops it;
# call it from the script's EXIT trap.
nginx_pid=""

start_nginx() {
  local dir=$1 listen="" tls=""
  [ "${2:-}" = h2c ] || [ "${2:-}" = h2 ] && listen=" http2"
  mkdir -p "$dir/www"
  printf 'Hello, dyno!\n' > "$dir/www/hello.txt"
  # Two free ports at once (both sockets held open while asked), so they differ.
  read -r port tls_port < <(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
  if [ "${2:-}" = h2 ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
      -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
      -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
    tls="server { listen 127.0.0.1:$tls_port ssl http2; ssl_certificate $dir/cert.pem; ssl_certificate_key $dir/key.pem; root $dir/www; http2_max_concurrent_streams 1000; }"
    tls_url="https://127.0.0.1:$tls_port/hello.txt"
  fi
  cat > "$dir/nginx.conf" <<CONF
daemon off;
user root;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000000;
  client_body_temp_path $dir/body; proxy_temp_path $dir/proxy; fastcgi_temp_path $dir/fastcgi;
  uwsgi_temp_path $dir/uwsgi; scgi_temp_path $dir/scgi;
  server { listen 127.0.0.1:$port$listen; root $dir/www; http2_max_concurrent_streams 1000; }
  $tls
}
CONF
  taskset -c 1 /usr/sbin/nginx -p "$dir" -c "$dir/nginx.conf" &
  nginx_pid=$!
  for _ in $(seq 50); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$port))" 2>/dev/null && break
    sleep 0.1
  done
  url="http://127.0.0.1:$port/hello.txt"
  [ -n "$listen" ] && url="h2c://127.0.0.1:$port/hello.txt"
  return 0
}

stop_nginx() {
  # nginx's exit status must not end the caller's cleanup early.
  if [ -n "$nginx_pid" ]; then kill "$nginx_pid" 2>/dev/null || true; wait "$nginx_pid" 2>/dev/null || true; fi
}
