#!/usr/bin/env bash
# A Citus cluster on this machine, from vendor/citus/ (Citus 13.2.2 for PostgreSQL 15):
# a coordinator and two workers, each its own PostgreSQL 15 cluster on a loopback port.
#   scripts/citus.sh build        builds and installs Citus (skipped when 13.2.2 is installed)
#   scripts/citus.sh start        builds if needed, starts the nodes, creates the database, prints its URL
#   scripts/citus.sh stop         stops every node (the data stays; `start` brings it back)
#   scripts/citus.sh status       each node: running or not, and the workers the coordinator knows
#   scripts/citus.sh add-worker   starts and adds a third worker (then rebalance: docs/scaling.md)
#   scripts/citus.sh remove-worker      drains the third worker's shards to the others and removes it
#   scripts/citus.sh restart-worker N [S]  stops worker N, S seconds down, starts it (a failure drill)
#   scripts/citus.sh createdb NAME      one more database with Citus on every node, its URL printed
#   scripts/citus.sh dropdb NAME        drops it from every node
#   scripts/citus.sh url          prints the DATABASE_URL
#   scripts/citus.sh destroy      stops the nodes and removes their data
# Settings (environment): MEMDASH_CITUS_VAR (the nodes' data, default var/citus of this checkout),
# MEMDASH_CITUS_PORT (the coordinator's port, default 9700; worker N listens on PORT+N),
# MEMDASH_CITUS_DB (default memdash), MEMDASH_CITUS_BUILD (the build tree, default var/citus-build).
# Run as root (as CI does) the nodes run as the `postgres` user, as Debian's own cluster does:
# PostgreSQL refuses to run as root. `make install` writes into PostgreSQL's folders: root, or sudo.
set -euo pipefail
cd "$(dirname "$0")/.."
checkout=$PWD

CITUS_VERSION=13.2.2
TARBALL=vendor/citus/citus-$CITUS_VERSION.tar.gz
PATCH=vendor/citus/pg15-have-createdb-privilege.patch
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
var=${MEMDASH_CITUS_VAR:-$checkout/var/citus}
build_root=${MEMDASH_CITUS_BUILD:-$checkout/var/citus-build}
port=${MEMDASH_CITUS_PORT:-9700}
db=${MEMDASH_CITUS_DB:-memdash}
case "$port" in ''|*[!0-9]*) echo "error: MEMDASH_CITUS_PORT must be a number, not '$port'" >&2; exit 2 ;; esac
case "$db" in ''|*[!a-z0-9_]*) echo "error: MEMDASH_CITUS_DB: lower-case letters, digits and _ only" >&2; exit 2 ;; esac

die() { echo "error: $*" >&2; exit 1; }
log() { echo "citus: $*" >&2; }

# --- who runs PostgreSQL ---------------------------------------------------------------------
if [ "$(id -u)" = 0 ]; then
  pg_user=postgres
  id "$pg_user" >/dev/null 2>&1 || die "running as root needs a 'postgres' user to run the nodes"
  as_pg() { runuser -u "$pg_user" -- "$@"; }
else
  pg_user=$(id -un)
  as_pg() { "$@"; }
fi

# --- build -----------------------------------------------------------------------------------
installed_version() {
  # The version compiled into citus.so ("Citus 13.2.2 on …") and the extension's control file.
  local libdir sharedir
  libdir=$("$PG_BIN/pg_config" --pkglibdir) sharedir=$("$PG_BIN/pg_config" --sharedir)
  [ -f "$libdir/citus.so" ] && [ -f "$sharedir/extension/citus.control" ] || return 1
  grep -qa "Citus $CITUS_VERSION" "$libdir/citus.so" || return 1
  grep -q "^default_version = '$(control_version)'" "$sharedir/extension/citus.control" || return 1
}
control_version() {
  tar xzOf "$TARBALL" "citus-$CITUS_VERSION/src/backend/distributed/citus.control" |
    sed -n "s/^default_version = '\(.*\)'/\1/p"
}

cmd_build() {
  [ -f "$TARBALL" ] || die "$TARBALL is missing"
  [ -x "$PG_BIN/pg_config" ] || die "$PG_BIN/pg_config is missing: install postgresql-server-dev-15"
  if installed_version; then
    log "Citus $CITUS_VERSION is installed ($("$PG_BIN/pg_config" --pkglibdir)/citus.so): nothing to build"
    return 0
  fi
  local src="$build_root/citus-$CITUS_VERSION" started=$SECONDS
  log "building Citus $CITUS_VERSION in $src (a few minutes)"
  rm -rf "$src" && mkdir -p "$build_root"
  tar xzf "$TARBALL" -C "$build_root"
  patch -s -p1 -d "$src" < "$PATCH"
  (
    cd "$src"
    PG_CONFIG="$PG_BIN/pg_config" ./configure --quiet PG_CONFIG="$PG_BIN/pg_config" >/dev/null
    make -s -j"$(nproc)" >/dev/null
    make -s install >/dev/null
  )
  installed_version || die "the build finished but Citus $CITUS_VERSION is not installed"
  log "built and installed Citus $CITUS_VERSION in $((SECONDS - started)) s"
}

# --- nodes -----------------------------------------------------------------------------------
# Node names: coordinator, worker1, worker2, worker3; worker N on port+N.
node_port() { case "$1" in coordinator) echo "$port" ;; worker*) echo $((port + ${1#worker})) ;; esac; }
node_dir() { echo "$var/$1"; }
nodes_present() {
  local n
  for n in coordinator worker1 worker2 worker3; do [ -f "$(node_dir "$n")/PG_VERSION" ] && echo "$n"; done
  return 0
}
is_running() { as_pg "$PG_BIN/pg_ctl" -D "$(node_dir "$1")" status >/dev/null 2>&1; }
psql_at() {  # psql_at PORT DB SQL...: one value per line, stops on the first error
  local p=$1 d=$2; shift 2
  PGOPTIONS="-c client_min_messages=warning" "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -At -h 127.0.0.1 -p "$p" -U postgres -d "$d" "$@"
}

init_node() {
  local name=$1 dir
  dir=$(node_dir "$name")
  [ -f "$dir/PG_VERSION" ] && return 0
  log "initdb $name ($dir, port $(node_port "$name"))"
  mkdir -p "$dir"
  chown "$pg_user" "$var" "$dir"
  chmod 700 "$dir"
  as_pg "$PG_BIN/initdb" -D "$dir" -U postgres --auth-local=trust --auth-host=trust \
    --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  cat >>"$dir/postgresql.conf" <<EOF

# scripts/citus.sh
listen_addresses = '127.0.0.1'
port = $(node_port "$name")
unix_socket_directories = '$dir'
shared_preload_libraries = 'citus'
max_connections = 300
shared_buffers = 256MB
wal_level = logical
max_wal_senders = 10
max_replication_slots = 10
max_worker_processes = 24
fsync = on
logging_collector = off
log_min_messages = warning
citus.max_client_connections = 250
EOF
  # trust on loopback only (listen_addresses above): a development and test cluster.
  cat >"$dir/pg_hba.conf" <<EOF
local all all trust
host all all 127.0.0.1/32 trust
host replication all 127.0.0.1/32 trust
EOF
}

start_node() {
  local name=$1 dir
  dir=$(node_dir "$name")
  is_running "$name" && return 0
  as_pg "$PG_BIN/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 start >/dev/null ||
    { tail -20 "$dir/server.log" >&2; die "$name did not start (log: $dir/server.log)"; }
}

stop_node() {
  local name=$1
  is_running "$name" || return 0
  as_pg "$PG_BIN/pg_ctl" -D "$(node_dir "$name")" -m fast -w -t 60 stop >/dev/null
}

# The database with the extension on every node, the coordinator told its own address and each
# worker's (node metadata lives in each database: a new database registers the nodes again).
ensure_database() {
  local d=$1 name
  for name in coordinator $(workers_present); do
    local p
    p=$(node_port "$name")
    if [ -z "$(psql_at "$p" postgres -c "SELECT 1 FROM pg_database WHERE datname = '$d'")" ]; then
      psql_at "$p" postgres -c "CREATE DATABASE $d"
    fi
    psql_at "$p" "$d" -c "CREATE EXTENSION IF NOT EXISTS citus"
  done
  psql_at "$port" "$d" -c "SELECT citus_set_coordinator_host('127.0.0.1', $port)" >/dev/null
  for name in $(workers_present); do register_worker "$d" "$name"; done
}
workers_present() { nodes_present | grep '^worker' || true; }
register_worker() {
  local d=$1 p
  p=$(node_port "$2")
  if [ -z "$(psql_at "$port" "$d" -c "SELECT 1 FROM pg_dist_node WHERE nodeport = $p AND noderole = 'primary'")" ]; then
    psql_at "$port" "$d" -c "SELECT citus_add_node('127.0.0.1', $p)" >/dev/null
  fi
}
databases() {  # the databases with Citus on the coordinator
  local d
  for d in $(psql_at "$port" postgres -c "SELECT datname FROM pg_database WHERE datallowconn AND datname NOT IN ('postgres', 'template1')"); do
    [ -n "$(psql_at "$port" "$d" -c "SELECT 1 FROM pg_extension WHERE extname = 'citus'")" ] && echo "$d"
  done
  return 0
}

url() { echo "postgres://postgres@127.0.0.1:$port/$db"; }

cmd_start() {
  installed_version || cmd_build
  mkdir -p "$var"
  chown "$pg_user" "$var"
  as_pg test -w "$var" ||
    die "the $pg_user user cannot write in $var (a folder above it is closed to it): set MEMDASH_CITUS_VAR to one it can reach, e.g. /tmp/memdash-citus"
  local name
  for name in coordinator worker1 worker2; do init_node "$name"; done
  for name in $(nodes_present); do start_node "$name"; done
  ensure_database "$db"
  log "coordinator 127.0.0.1:$port, workers $(for n in $(workers_present); do printf '%s ' "127.0.0.1:$(node_port "$n")"; done)(data: $var)"
  echo "DATABASE_URL=$(url)"
}

cmd_stop() {
  local name
  for name in $(nodes_present | tac); do stop_node "$name"; done
  log "stopped"
}

cmd_status() {
  local name any=1
  for name in $(nodes_present); do
    if is_running "$name"; then
      echo "$name 127.0.0.1:$(node_port "$name") running"
    else
      echo "$name 127.0.0.1:$(node_port "$name") stopped"; any=0
    fi
  done
  [ -n "$(nodes_present)" ] || { echo "no cluster in $var (scripts/citus.sh start)"; return 3; }
  if is_running coordinator; then
    echo "workers known to $db:"
    psql_at "$port" "$db" -F ' ' -c "SELECT nodename || ':' || nodeport, CASE WHEN isactive THEN 'active' ELSE 'inactive' END FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeport" | sed 's/^/  /'
    echo "DATABASE_URL=$(url)"
  fi
  [ "$any" = 1 ] || return 3
}

cmd_add_worker() {
  is_running coordinator || die "the cluster is not running (scripts/citus.sh start)"
  local name=worker3 d
  init_node "$name"
  start_node "$name"
  for d in $(databases); do
    psql_at "$(node_port "$name")" postgres -c "SELECT 1 FROM pg_database WHERE datname = '$d'" | grep -q 1 ||
      psql_at "$(node_port "$name")" postgres -c "CREATE DATABASE $d"
    psql_at "$(node_port "$name")" "$d" -c "CREATE EXTENSION IF NOT EXISTS citus"
    register_worker "$d" "$name"
  done
  log "worker3 127.0.0.1:$(node_port "$name") added; it holds no shards until a rebalance:"
  log "  psql $(url) -c \"SELECT citus_rebalance_start()\""
}

cmd_remove_worker() {
  # Its shards moved to the other workers first (citus_drain_node), then it leaves every
  # database's node list, stops, and its data goes.
  local name=worker3 p d
  p=$(node_port "$name")
  [ -f "$(node_dir "$name")/PG_VERSION" ] || { log "no $name in $var"; return 0; }
  is_running coordinator || die "the cluster is not running (scripts/citus.sh start)"
  start_node "$name"
  for d in $(databases); do
    if [ -n "$(psql_at "$port" "$d" -c "SELECT 1 FROM pg_dist_node WHERE nodeport = $p")" ]; then
      psql_at "$port" "$d" -c "SELECT citus_drain_node('127.0.0.1', $p, shard_transfer_mode := 'block_writes')" >/dev/null
      psql_at "$port" "$d" -c "SELECT citus_remove_node('127.0.0.1', $p)" >/dev/null
    fi
  done
  stop_node "$name"
  rm -rf "$(node_dir "$name")"
  log "$name drained, removed and its data deleted"
}

cmd_restart_worker() {
  local name="worker${1:?restart-worker needs a worker number}" down=${2:-0}
  case "$down" in *[!0-9.]*) die "restart-worker N [SECONDS]: seconds down, a number" ;; esac
  [ -f "$(node_dir "$name")/PG_VERSION" ] || die "no $name in $var"
  # -m fast, as a crash looks to the coordinator: its open transactions there are cut.
  stop_node "$name"
  sleep "$down"
  start_node "$name"
  log "$name restarted (down ${down} s)"
}

cmd_createdb() {
  local d=${1:?createdb needs a database name}
  case "$d" in *[!a-z0-9_]*) die "database names: lower-case letters, digits and _ only" ;; esac
  is_running coordinator || die "the cluster is not running (scripts/citus.sh start)"
  ensure_database "$d"
  echo "postgres://postgres@127.0.0.1:$port/$d"
}

cmd_dropdb() {
  local d=${1:?dropdb needs a database name} name
  case "$d" in *[!a-z0-9_]*) die "database names: lower-case letters, digits and _ only" ;; esac
  [ "$d" != postgres ] || die "not the postgres database"
  for name in $(nodes_present); do
    is_running "$name" && psql_at "$(node_port "$name")" postgres -c "DROP DATABASE IF EXISTS $d WITH (FORCE)"
  done
  log "dropped $d on every node"
}

cmd_destroy() {
  cmd_stop
  rm -rf "$var"
  log "removed $var"
}

case "${1:-}" in
  build) cmd_build ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  add-worker) cmd_add_worker ;;
  remove-worker) cmd_remove_worker ;;
  restart-worker) cmd_restart_worker "${2:-}" "${3:-0}" ;;
  createdb) cmd_createdb "${2:-}" ;;
  dropdb) cmd_dropdb "${2:-}" ;;
  url) url ;;
  destroy) cmd_destroy ;;
  -h|--help|help) sed -n '2,19p' "$0" | cut -c3- ;;
  *) sed -n '2,19p' "$0" | cut -c3- >&2; exit 2 ;;
esac
