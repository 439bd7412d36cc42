#!/usr/bin/env bash
# Creates .venv with Python 3.12+ and installs requirements.txt (again only when it changed).
set -euo pipefail
cd "$(dirname "$0")/.."

find_python() {
  for candidate in "${PYTHON:-}" python3.13 python3.12 "$HOME/.pyenv/versions/3.12.1/bin/python" \
                   "$HOME/.pyenv/versions/3.13.0/bin/python" python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
      command -v "$candidate"; return 0
    fi
  done
  return 1
}

if [ ! -x .venv/bin/python ]; then
  PY=$(find_python) || { echo "error: memdash needs Python 3.12 or newer (set PYTHON=/path/to/python3.12)" >&2; exit 1; }
  echo "Creating .venv with $("$PY" --version)" >&2
  "$PY" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "Installing requirements into .venv" >&2
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -r requirements.txt
  echo "$want" > "$stamp"
fi
