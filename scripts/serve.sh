#!/usr/bin/env bash
# The embedded default, from a fresh clone: install, migrate SQLite, load the demo, serve.
# Static files are served as in production: collected with hashed names and brotli/gzip copies,
# and sent by whitenoise with far-future cache headers (MEMDASH_COLLECTED_STATIC; settings.py).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
export MEMDASH_COLLECTED_STATIC=1
.venv/bin/python manage.py migrate --no-input -v0
.venv/bin/python manage.py load_demo
# Collected again only when a static file or the requirements changed (compressing the plotly
# bundle takes a while).
static_root="${MEMDASH_VAR_DIR:-var}/static"
stamp="$static_root/.sources.sha256"
want=$( (find static memdash -type f \( -path 'static/*' -o -path 'memdash/*/static/*' \) -print0 | sort -z | xargs -0 sha256sum;
         sha256sum requirements.txt) | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || [ ! -f "$static_root/staticfiles.json" ]; then
  echo "Collecting static files (hashed names, brotli and gzip copies)" >&2
  .venv/bin/python manage.py collectstatic --no-input -v0
  echo "$want" > "$stamp"
fi
echo "Serving memdash on http://127.0.0.1:8000/ (Ctrl-C stops it)"
exec .venv/bin/python manage.py runserver 127.0.0.1:8000
