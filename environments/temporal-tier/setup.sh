#!/bin/sh
# The Temporal server tier's set-up steps, the one source for every place that runs them: the
# local topology (environments/temporal-tier/launcher.ts runs this file) and docker-compose.yml
# (the temporal-schema and temporal-namespace jobs mount and run this file on
# temporalio/admin-tools). POSIX sh, so it runs on admin-tools' shell as on this machine.
#
#   setup.sh schema      before the server starts: creates the two databases and sets up and
#                        updates their schemas (persistence, then SQL visibility)
#   setup.sh namespace   once the frontend answers: registers the namespace with its retention,
#                        then the search attributes (all Keyword)
#
# Both are idempotent: a database, schema version, namespace or attribute that exists is kept.
# Settings (environment):
#   SQL_PLUGIN (postgres12), SQL_HOST, SQL_PORT (5432), SQL_USER, SQL_PASSWORD,
#   TEMPORAL_DB (temporal), TEMPORAL_VISIBILITY_DB (temporal_visibility),
#   SCHEMA_DIR   the server's schema/postgresql/v12 folder (admin-tools: /etc/temporal/schema/...)
#   TEMPORAL_ADDRESS (host:port of the frontend), TEMPORAL_NAMESPACE (default),
#   NAMESPACE_RETENTION (72h), SEARCH_ATTRIBUTES (space-separated names),
#   TEMPORAL_SQL_TOOL (temporal-sql-tool), TEMPORAL_CLI (temporal): the binaries to run.
#   The CLI reads TEMPORAL_TLS_*, TEMPORAL_API_KEY itself (docs/configuration.md, "Connecting
#   to Temporal"): the local tier sets its client certificate there for its mTLS frontend.
set -eu

sql_tool="${TEMPORAL_SQL_TOOL:-temporal-sql-tool}"
cli="${TEMPORAL_CLI:-temporal}"

# One database: create it (an existing one is fine), set up version 0.0, update to the newest.
setup_database() {
  db="$1"
  versioned="$2"
  set -- "$sql_tool" --plugin "${SQL_PLUGIN:-postgres12}" --ep "$SQL_HOST" \
    -p "${SQL_PORT:-5432}" -u "$SQL_USER" --pw "$SQL_PASSWORD" --db "$db"
  "$@" create-database 2>/dev/null || echo "setup: database $db exists"
  "$@" setup-schema -v 0.0
  "$@" update-schema -d "$versioned"
  echo "setup: schema of $db is current"
}

schema() {
  setup_database "${TEMPORAL_DB:-temporal}" "$SCHEMA_DIR/temporal/versioned"
  setup_database "${TEMPORAL_VISIBILITY_DB:-temporal_visibility}" \
    "$SCHEMA_DIR/visibility/versioned"
}

# Whether search attribute $1 is listed in the namespace.
registered() {
  "$cli" operator search-attribute list --address "$address" --namespace "$ns" |
    grep -qw -- "$1"
}

namespace() {
  address="$TEMPORAL_ADDRESS"
  ns="${TEMPORAL_NAMESPACE:-default}"
  # The frontend answers health before its namespace registry is loaded: retry for a minute.
  tries=0
  until "$cli" operator namespace describe --address "$address" --namespace "$ns" >/dev/null 2>&1 ||
    "$cli" operator namespace create --address "$address" --namespace "$ns" \
      --retention "${NAMESPACE_RETENTION:-72h}" >/dev/null; do
    tries=$((tries + 1))
    [ "$tries" -lt 30 ] || { echo "setup: namespace $ns cannot be registered" >&2; exit 1; }
    sleep 2
  done
  echo "setup: namespace $ns registered (retention ${NAMESPACE_RETENTION:-72h})"
  # One by one, again until the frontend's services have all joined; an attribute that exists
  # already is fine (then `list` shows it).
  for name in $SEARCH_ATTRIBUTES; do
    tries=0
    until out=$("$cli" operator search-attribute create --address "$address" \
      --namespace "$ns" --name "$name" --type Keyword 2>&1) || registered "$name"; do
      tries=$((tries + 1))
      [ "$tries" -lt 30 ] || { echo "setup: search attribute $name: $out" >&2; exit 1; }
      sleep 2
    done
  done
  for name in $SEARCH_ATTRIBUTES; do
    registered "$name" || { echo "setup: search attribute $name is not listed" >&2; exit 1; }
  done
  echo "setup: search attributes $SEARCH_ATTRIBUTES registered"
}

case "${1:-}" in
  schema) schema ;;
  namespace) namespace ;;
  *)
    echo "usage: setup.sh schema|namespace" >&2
    exit 2
    ;;
esac
