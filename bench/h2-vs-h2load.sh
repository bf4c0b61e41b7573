#!/usr/bin/env bash
# dyno against h2load (nghttp2), in turn, on the same nginx speaking HTTP/2 in the clear (prior
# knowledge) and over TLS (h2 by ALPN; nginx's self-signed certificate, verified by neither tool:
# h2load does not verify, dyno runs with --insecure), serving a static 13-byte file: for each
# shape CONNECTIONSxSTREAMS (4x1, 4x10, 50x10 by default, and the same over TLS, tls-4x1…) both
# tools offer a closed loop of that many connections with that many
# streams each (h2load -c C -m M; dyno -c C --streams M), DURATION (default 10 s), in ROUNDS
# rounds (default 3), h2load first in odd rounds and dyno first in even ones, each generator on
# one thread pinned to core 0 and nginx to core 1. Prints each run's requests/s and CPU per
# request (user + system of the generator process, divided by its requests), then dyno's ratios
# to h2load within each round and their median. nginx's keepalive_requests is raised so that no
# connection is closed mid-run (h2load stops a client at GOAWAY; dyno would reconnect).
# Needs nginx, nghttp2-client and openssl (installed from the distribution's packages if missing),
# taskset and python3. Traffic stays on 127.0.0.1.
# Usage: bench/h2-vs-h2load.sh [DURATION] [ROUNDS] [SHAPES...]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10s}
rounds=${2:-3}
shift $(($# < 2 ? $# : 2))
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(4x1 4x10 50x10 tls-4x1 tls-4x10 tls-50x10)
missing=()
[ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v h2load >/dev/null 2>&1 || missing+=(nghttp2-client)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
cargo build --release -q
dyno=$PWD/target/release/dyno
secs=${duration%s}

. bench/lib.sh
. bench/nginx.sh
work=$(mktemp -d)
cleanup() {
  stop_nginx
  rm -rf "$work"
}
trap cleanup EXIT
start_nginx "$work" h2
plain=${url/h2c:/http:}

# A shape's connections: C, or tls-C for the same over TLS; sets c and, for each tool, its URL.
target() {
  c=${1#tls-}
  if [ "$c" = "$1" ]; then h2load_url=$plain dyno_url=$url tls=(); else h2load_url=$tls_url dyno_url=$tls_url tls=(--insecure); fi
}

h2load_run() { # C M -> "REQUESTS RATE"
  local out c h2load_url dyno_url tls
  target "$1"
  out=$(measure h2load -t 1 -c "$c" -m "$2" -D "$secs" "$h2load_url")
  python3 - "$out" <<'PY'
import re, sys
t = sys.argv[1]
done = int(re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded", t).group(2))
rate = float(re.search(r"finished in [\d.]+s, ([\d.]+) req/s", t).group(1))
cpu = int(re.search(r"cpu_ns=(\d+)", t).group(1))
print(done, rate, cpu / done / 1000)
PY
}

dyno_run() { # C M ROUND -> "REQUESTS RATE CPU_PER_REQUEST_US"
  local out c h2load_url dyno_url tls
  target "$1"
  out=$(measure "$dyno" run "$dyno_url" -c "$c" --streams "$2" -d "$duration" -r 1 --threads 1 "${tls[@]}" \
    -f json -o "$work/d$1x$2-$3")
  dyno_load_figures "$out"
}

echo "nginx $(/usr/sbin/nginx -v 2>&1 | sed 's/.*\///'), $(h2load --version | head -1), $($dyno --version)"
alternate h2load request "$rounds" shapes
ratios "$work/rounds" h2load request
