#!/usr/bin/env bash
# The test suite, on as many workers as the machine has cores (pytest-xdist; each worker its own
# test database). SQLite by default; DATABASE_URL=postgres://… runs it on PostgreSQL.
#   scripts/test.sh                 everything (browser tests drive /usr/bin/chromium)
#   scripts/test.sh --fast          the inner loop: SQLite, no browser, none of the `slow` tests
#   scripts/test.sh [--fast] ARGS   pytest's own arguments follow (paths, -k, -x, -n 1, ...)
# MEMDASH_REQUIRE_BROWSER=1 makes a missing Chromium a failure instead of a skip (CI sets it).
set -euo pipefail
cd "$(dirname "$0")/.."

fast=""
args=()
for arg in "$@"; do
  case "$arg" in
    --fast) fast=1 ;;
    *) args+=("$arg") ;;
  esac
done

scripts/bootstrap.sh
# Workers take tests from each other's queues as they finish (`worksteal`): one worker's
# slow module does not leave the other idle. `-n 1`, `-n 0` or `-p no:xdist` say otherwise.
workers=(-n "${MEMDASH_TEST_WORKERS:-auto}" --dist worksteal)
for arg in "${args[@]}"; do
  case "$arg" in
    -n|-n[0-9]*|--numprocesses*|no:xdist|-pno:xdist) workers=() ;;
  esac
done
if [ -n "$fast" ]; then
  unset DATABASE_URL
  exec .venv/bin/pytest "${workers[@]}" -m "not browser and not slow" "${args[@]}"
fi
exec .venv/bin/pytest "${workers[@]}" "${args[@]}"
