#!/usr/bin/env bash
# Makes adapters/zodb/.venv: a Python virtual environment with the ZODB adapter's packages,
# pinned in requirements.txt, from PyPI. The adapter runs itself with it (adapter.py); run again
# after requirements.txt changes. PYTHON chooses the interpreter (default: python3).
set -euo pipefail
cd "$(dirname "$0")"
python="${PYTHON:-python3}"
stamp=.venv/requirements.txt
if [ -x .venv/bin/python ] && cmp -s requirements.txt "$stamp"; then
  exit 0
fi
rm -rf .venv
"$python" -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
cp requirements.txt "$stamp"
echo "adapters/zodb/.venv: $(.venv/bin/python -c 'import ZODB, ZEO, relstorage; print("ZODB, ZEO and RelStorage installed")')"
