#!/usr/bin/env bash
# The embedded default, from a fresh clone: install, migrate SQLite, load the demo, serve.
#   scripts/serve.sh [--port N]     (default 8000; or PORT=N)
# Static files are served as in production: collected with hashed names and brotli/gzip copies,
# and sent by whitenoise with far-future cache headers (MEMDASH_COLLECTED_STATIC; settings.py).
set -euo pipefail
cd "$(dirname "$0")/.."

port="${PORT:-8000}"
while [ $# -gt 0 ]; do
  case "$1" in
    --port) port="${2:?--port needs a number}"; shift 2 ;;
    --port=*) port="${1#--port=}"; shift ;;
    -h|--help) sed -n '2,5p' "$0" | cut -c3-; exit 0 ;;
    *) echo "error: unknown argument $1 (scripts/serve.sh [--port N])" >&2; exit 2 ;;
  esac
done
case "$port" in
  ''|*[!0-9]*) echo "error: --port takes a number, not '$port'" >&2; exit 2 ;;
esac

scripts/bootstrap.sh
export MEMDASH_COLLECTED_STATIC=1

# Collected again only when a static file or the requirements changed, and meanwhile (a second
# process: the machine's other core) the database is migrated and the demo loaded.
static_root="${MEMDASH_VAR_DIR:-var}/static"
stamp="$static_root/.sources.sha256"
want=$( (find static memdash -type f \( -path 'static/*' -o -path 'memdash/*/static/*' \) -print0 | sort -z | xargs -0 sha256sum;
         sha256sum requirements.txt memdash/core/staticfiles.py) | sha256sum | cut -d' ' -f1)
collecting=""
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || [ ! -f "$static_root/staticfiles.json" ]; then
  echo "Collecting static files (hashed names, brotli and gzip copies) meanwhile" >&2
  (.venv/bin/python manage.py collectstatic --no-input --clear -v0 && echo "$want" > "$stamp") &
  collecting=$!
fi
.venv/bin/python manage.py migrate --no-input -v0
.venv/bin/python manage.py load_demo
if [ -n "$collecting" ]; then
  wait "$collecting" || { echo "error: collectstatic failed" >&2; exit 1; }
fi
echo "Serving memdash on http://127.0.0.1:$port/ (Ctrl-C stops it)"
exec .venv/bin/python manage.py runserver "127.0.0.1:$port"
