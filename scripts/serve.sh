#!/usr/bin/env bash
# The embedded default, from a fresh clone: install, migrate SQLite, load the demo, serve.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
.venv/bin/python manage.py migrate --no-input -v0
.venv/bin/python manage.py load_demo
echo "Serving memdash on http://127.0.0.1:8000/ (Ctrl-C stops it)"
exec .venv/bin/python manage.py runserver 127.0.0.1:8000
