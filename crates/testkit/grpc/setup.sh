#!/usr/bin/env bash
# Makes crates/testkit/grpc/.venv: a Python virtual environment with the gRPC test server's
# packages (echo_server.py), pinned in requirements.txt, from PyPI. Run again after
# requirements.txt changes; does nothing when they are installed already.
set -euo pipefail
cd "$(dirname "$0")"
default=python3
[ -x /usr/bin/python3 ] && default=/usr/bin/python3
python="${PYTHON:-$default}"
stamp=.venv/requirements.txt
want=$(cat requirements.txt; echo "# $python")
if [ -x .venv/bin/python ] && [ "$want" = "$(cat "$stamp" 2>/dev/null)" ]; then
  exit 0
fi
rm -rf .venv
"$python" -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
echo "$want" >"$stamp"
echo "crates/testkit/grpc/.venv: $(.venv/bin/python -c 'import grpc; print("grpcio", grpc.__version__)')"
