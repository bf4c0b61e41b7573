#!/usr/bin/env bash
# Makes adapters/zodb/.venv: a Python virtual environment with the ZODB adapter's packages,
# pinned in requirements.txt, from PyPI. The adapter runs itself with it (adapter.py); run again
# after requirements.txt changes. PYTHON chooses the interpreter: default the distribution's
# (/usr/bin/python3), whose symbols py-spy reads (it cannot read pyenv's 3.11.7 build here), else
# python3 from PATH.
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
echo "adapters/zodb/.venv: $(.venv/bin/python -c 'import ZODB, ZEO, relstorage; print("ZODB, ZEO and RelStorage installed")')"
