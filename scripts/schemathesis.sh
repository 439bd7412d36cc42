#!/usr/bin/env bash
# The OpenAPI document against the live server: a throwaway SQLite database in a temporary
# MEMDASH_VAR_DIR, migrated and loaded with the demo, served by gunicorn with production settings
# (DEBUG off) on a free local port, then `schemathesis run` with every check over every /api/
# operation, authenticated per operation as the schema says (scripts/schemathesis.toml). Any
# failure makes this script exit non-zero. Its budget: SCHEMATHESIS_MAX_EXAMPLES test cases per
# operation and phase (default 25) within SCHEMATHESIS_MAX_TIME seconds (default 120: fuzzing and
# stateful testing go on until it is spent), after a minute of setup. The seed is fixed (3)
# so that CI runs the same cases each time; SCHEMATHESIS_SEED=$RANDOM explores further.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
[ -x .venv/bin/schemathesis ] || { echo "error: schemathesis is not installed (scripts/bootstrap.sh)" >&2; exit 1; }

work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

unset DATABASE_URL REDIS_URL
export MEMDASH_VAR_DIR="$work/var"
export MEMDASH_ENV=production DEBUG=0
SECRET_KEY="schemathesis-$(head -c 64 /dev/urandom | base64 | tr -dc A-Za-z0-9)"
export SECRET_KEY
export ALLOWED_HOSTS=127.0.0.1
export SECURE_SSL_REDIRECT=0  # plain HTTP on the loopback address: there is no TLS proxy here
# The throttles stay on (their code runs) with limits no run reaches: schemathesis sends wrong
# tokens and keys on purpose (its `ignored_auth` check) and hundreds of uploads a minute, and a
# lockout or an exhausted quota would answer every later request 429 and test nothing else.
export MEMDASH_AUTH_FAILURE_LIMIT=1000000 MEMDASH_UPLOADS_PER_KEY_PER_MINUTE=1000000
export MEMDASH_TASKS=immediate LOG_LEVEL=ERROR  # the demo is stored here and now

echo "schemathesis: migrating a throwaway database and loading the demo" >&2
$PY manage.py migrate --no-input -v0
$PY manage.py load_demo -v0 >/dev/null
MEMDASH_SCHEMATHESIS_TOKEN="Token $($PY manage.py create_api_token demo --name schemathesis 2>/dev/null)"
MEMDASH_SCHEMATHESIS_INGEST_KEY=$($PY manage.py create_ingest_key com.example.chat --platform ios \
  --key-name schemathesis 2>/dev/null)
export MEMDASH_SCHEMATHESIS_TOKEN MEMDASH_SCHEMATHESIS_INGEST_KEY
export MEMDASH_SCHEMATHESIS_CACHE="$work/cache"

# The server as production runs it: tasks go to the database queue (docs/scaling.md), so an
# upload door stores the body and answers 202 with its status URL, and a body it cannot read is
# refused by a worker (what a worker does is tested in tests/); no worker runs here.
export MEMDASH_TASKS=database
port=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
# No limit on the request line: schemathesis sends URLs past gunicorn's 4 KiB, whose 414 page is
# gunicorn's answer, not the API's (a proxy in front of memdash has its own limit).
.venv/bin/gunicorn memdash.wsgi:application --bind "127.0.0.1:$port" --workers 2 --timeout 120 \
  --limit-request-line 0 --log-level warning --error-logfile "$work/gunicorn.log" &
server=$!
for _ in $(seq 60); do
  curl -fsS -o /dev/null -H "Authorization: $MEMDASH_SCHEMATHESIS_TOKEN" "$base/api/v1/apps" && break
  kill -0 "$server" 2>/dev/null || { cat "$work/gunicorn.log" >&2; exit 1; }
  sleep 1
done
# The schema is served to signed-in callers only (SPECTACULAR_SETTINGS): fetched here with the
# token, it is the live server's own document that schemathesis reads.
curl -fsS -H "Authorization: $MEMDASH_SCHEMATHESIS_TOKEN" -H "Accept: application/vnd.oai.openapi+json" \
  -o "$work/openapi.json" "$base/api/v1/schema/?format=json"

status=0
.venv/bin/schemathesis --config-file scripts/schemathesis.toml run "$work/openapi.json" \
  --url "$base" \
  --checks all \
  --phases examples,coverage,fuzzing,stateful \
  --max-examples "${SCHEMATHESIS_MAX_EXAMPLES:-25}" \
  --max-time "${SCHEMATHESIS_MAX_TIME:-120}" \
  --workers 2 \
  --seed "${SCHEMATHESIS_SEED:-3}" \
  --request-timeout 60 \
  --report junit --report-dir "${SCHEMATHESIS_REPORT_DIR:-$work/report}" \
  "$@" || status=$?
if [ -s "$work/gunicorn.log" ]; then
  echo "--- gunicorn's log ---" >&2
  cat "$work/gunicorn.log" >&2
fi
exit "$status"
