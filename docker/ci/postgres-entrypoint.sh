#!/bin/bash
# The first start makes the cluster, the user and the database; every start then runs postgres.
set -euo pipefail
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
    initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
        --encoding=UTF8 --locale=C.UTF-8 -D "$PGDATA" >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    # Single-user mode: no server answers (or looks ready to a health check) before the real one.
    if [ "$POSTGRES_DB" != postgres ]; then
        printf 'CREATE DATABASE "%s" OWNER "%s"\n' "$POSTGRES_DB" "$POSTGRES_USER" | postgres --single -D "$PGDATA" postgres >/dev/null
    fi
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
