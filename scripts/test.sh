#!/usr/bin/env bash
# The whole test suite. SQLite by default; DATABASE_URL=postgres://… runs it on PostgreSQL.
# Browser tests need Debian's chromium (/usr/bin/chromium); MEMDASH_REQUIRE_BROWSER=1 makes
# its absence a failure instead of a skip (CI sets it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
exec .venv/bin/pytest "$@"
