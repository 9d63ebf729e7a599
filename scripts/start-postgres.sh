#!/usr/bin/env bash
# Start the local PostgreSQL cluster (Debian, apt-installed) and create the harness-rl role and
# databases. Idempotent: safe to run again while it is up. Progress goes to stderr; stdout is only
# `export …` lines, so `eval "$(scripts/start-postgres.sh)"` sets HARNESS_RL_TEST_PG (and HARNESS_RL_PG).
set -euo pipefail

ROLE=harness_rl
PASSWORD=harness_rl
HOST=127.0.0.1
PORT=5432
log() { echo "start-postgres: $*" >&2; }

as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres -- "$@"; fi
}
root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

if ! command -v pg_lsclusters >/dev/null 2>&1; then
  log "PostgreSQL is not installed (apt-get install postgresql)"
  exit 1
fi

# The newest installed server version; the cluster "main" of it (created if apt did not).
VERSION="$(ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -1)"
VERSION="${VERSION:-15}"
if ! pg_lsclusters -h | awk '{print $1" "$2}' | grep -qx "$VERSION main"; then
  log "creating cluster $VERSION/main"
  root pg_createcluster "$VERSION" main --port "$PORT" >&2
fi
if ! pg_lsclusters -h | awk -v v="$VERSION" '$1==v && $2=="main" {print $4}' | grep -q online; then
  log "starting cluster $VERSION/main"
  root pg_ctlcluster "$VERSION" main start >&2
fi
PORT="$(pg_lsclusters -h | awk -v v="$VERSION" '$1==v && $2=="main" {print $3}')"

for _ in $(seq 1 60); do
  if pg_isready -q -h "$HOST" -p "$PORT"; then break; fi
  sleep 0.5
done
pg_isready -h "$HOST" -p "$PORT" >&2 || { log "PostgreSQL did not become ready"; exit 1; }

psql_admin() { as_postgres psql -X -q -v ON_ERROR_STOP=1 -p "$PORT" "$@"; }

if [ "$(psql_admin -tAc "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'")" != 1 ]; then
  log "creating role $ROLE"
  psql_admin -c "CREATE ROLE $ROLE LOGIN PASSWORD '$PASSWORD'" >&2
else
  psql_admin -c "ALTER ROLE $ROLE LOGIN PASSWORD '$PASSWORD'" >&2
fi
for DB in harness_rl harness_rl_test; do
  if [ "$(psql_admin -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]; then
    log "creating database $DB"
    psql_admin -c "CREATE DATABASE $DB OWNER $ROLE" >&2
  fi
done

BASE="postgres://$ROLE:$PASSWORD@$HOST:$PORT"
log "ready: $BASE/harness_rl_test"
echo "export HARNESS_RL_PG=$BASE/harness_rl"
echo "export HARNESS_RL_TEST_PG=$BASE/harness_rl_test"
