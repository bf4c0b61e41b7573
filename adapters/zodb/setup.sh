#!/usr/bin/env bash
# Makes adapters/zodb/.venv: a Python virtual environment with the ZODB adapter's packages,
# pinned in requirements.txt, from PyPI (scripts/pinned-venv). The adapter runs itself with it
# (adapter.py); run again after requirements.txt changes.
set -euo pipefail
cd "$(dirname "$0")"
../../scripts/pinned-venv .
echo "adapters/zodb/.venv: $(.venv/bin/python -c 'import ZODB, ZEO, relstorage; print("ZODB, ZEO and RelStorage installed")')"
