#!/usr/bin/env bash
# Makes crates/testkit/grpc/.venv: a Python virtual environment with the gRPC test server's
# packages (echo_server.py), pinned in requirements.txt, from PyPI (scripts/pinned-venv). Run
# again after requirements.txt changes; does nothing when they are installed already.
set -euo pipefail
cd "$(dirname "$0")"
../../../scripts/pinned-venv .
echo "crates/testkit/grpc/.venv: $(.venv/bin/python -c 'import grpc; print("grpcio", grpc.__version__)')"
