#!/usr/bin/env bash
# A durable PostgreSQL cluster for `bench` figures (production runs fsync=on; the tests'
# throw-away cluster does not). Prints the DATABASE_URL to use; stop it with
#   scripts/durable-cluster.sh stop DIR
# Usage: scripts/durable-cluster.sh [DIR] [PORT]   (defaults: /tmp/rw-durable, 55433)
set -euo pipefail
if [ "${1:-}" = stop ]; then
    dir=${2:-/tmp/rw-durable}
    run() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
    run "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/pg_ctl -D $dir/data stop -m fast"
    exit 0
fi
dir=${1:-/tmp/rw-durable}
port=${2:-55433}
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
run() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
mkdir -p "$dir"
[ "$(id -u)" = 0 ] && chown postgres "$dir"
if [ ! -f "$dir/data/PG_VERSION" ]; then
    run "$bin/initdb -D $dir/data -U postgres -A trust --no-sync >/dev/null"
    cat >> "$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
fsync = on
synchronous_commit = on
full_page_writes = on
max_connections = 200
shared_buffers = 512MB
shared_preload_libraries = 'pg_stat_statements'
# As production sizes it: with the 1 GB default a benchmark run checkpoints every few seconds,
# and whether a phase starts just after one (every page's first change then logs the whole
# page) swung the figures by half.
max_wal_size = 8GB
checkpoint_timeout = 15min
CONF
fi
run "$bin/pg_ctl -D $dir/data -l $dir/log -w start >/dev/null"
run "$bin/psql -h 127.0.0.1 -p $port -U postgres -qc 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements' postgres" >/dev/null
echo "postgresql://postgres@127.0.0.1:$port/postgres?sslmode=disable"
