# PostgreSQL for CI, sourced by .ci/run (bash, `set -euo pipefail`).
#
#   ci_postgres_start   exports TEST_DATABASE_URL for a throw-away role and database
#   ci_postgres_stop    drops them (and stops the cluster if ci_postgres_start started it)
#
# Order: a TEST_DATABASE_URL already set is used as is (nothing created, nothing dropped);
# otherwise a Debian PostgreSQL cluster is reused when installed (started if it is down), and
# installed from Debian's packages when missing (`apt-get update`, then
# `apt-get install -y postgresql`; needs root or sudo). The install time is printed.

CI_POSTGRES_NAME=''
CI_POSTGRES_PORT=''
CI_POSTGRES_STARTED_CLUSTER=''

# Runs a command as root: directly when we are root, else through sudo.
ci_postgres_as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo -n "$@"
  else
    echo "ci-postgres: need root or sudo to run: $*" >&2
    return 1
  fi
}

# Runs a command as the postgres OS user (peer authentication over the Unix socket).
ci_postgres_as_postgres() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    sudo -n -u postgres "$@"
  fi
}

# psql as the superuser on the chosen cluster; stops at the first SQL error.
ci_postgres_psql() {
  ci_postgres_as_postgres psql --no-psqlrc --quiet -v ON_ERROR_STOP=1 \
    -p "$CI_POSTGRES_PORT" -d postgres "$@"
}

ci_postgres_install() {
  if ! command -v apt-get >/dev/null; then
    echo "ci-postgres: PostgreSQL is missing and apt-get is not available; install it or set TEST_DATABASE_URL" >&2
    return 1
  fi
  local began
  began=$(date +%s)
  echo "== installing PostgreSQL from Debian's packages"
  ci_postgres_as_root apt-get update -qq
  ci_postgres_as_root env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  echo "== PostgreSQL installed in $(($(date +%s) - began)) s"
}

# Picks the cluster to use (an online one, else the newest version's), creating one if the
# packages are installed without any, and starts it when it is down. Sets CI_POSTGRES_PORT.
ci_postgres_cluster_up() {
  local version cluster port status
  read -r version cluster port status _ < <(
    pg_lsclusters -h | sort -k4,4r -k1,1Vr | head -n 1 # "online" sorts before "down"
  ) || true
  if [ -z "${version:-}" ]; then
    # shellcheck disable=SC2012 # version directories are plain numbers
    version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
    cluster=main
    echo "== creating PostgreSQL cluster $version/$cluster"
    ci_postgres_as_root pg_createcluster "$version" "$cluster" >/dev/null
    read -r version cluster port status _ < <(pg_lsclusters -h | grep -E "^$version +$cluster ")
  fi
  CI_POSTGRES_PORT=$port
  if [[ "$status" != online* ]]; then
    echo "== starting PostgreSQL $version/$cluster on port $port"
    ci_postgres_as_root pg_ctlcluster "$version" "$cluster" start
    CI_POSTGRES_STARTED_CLUSTER="$version $cluster"
  else
    echo "== reusing running PostgreSQL $version/$cluster on port $port"
  fi
  local tries=0
  until pg_isready -q -h 127.0.0.1 -p "$port"; do
    tries=$((tries + 1))
    if [ "$tries" -ge 60 ]; then
      echo "ci-postgres: PostgreSQL $version/$cluster did not accept connections within 30 s" >&2
      return 1
    fi
    sleep 0.5
  done
}

ci_postgres_start() {
  if [ -n "${TEST_DATABASE_URL:-}" ]; then
    echo "== using the given TEST_DATABASE_URL"
    return 0
  fi
  local began
  began=$(date +%s)
  if ! command -v pg_lsclusters >/dev/null || ! compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; then
    ci_postgres_install
  fi
  ci_postgres_cluster_up

  # Lower-case hex only, so the name needs no quoting; the password is for this run only.
  CI_POSTGRES_NAME="ci_$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
  local password
  password=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  ci_postgres_psql -c "create role $CI_POSTGRES_NAME login password '$password'"
  ci_postgres_psql -c "create database $CI_POSTGRES_NAME owner $CI_POSTGRES_NAME"
  export TEST_DATABASE_URL="postgres://$CI_POSTGRES_NAME:$password@127.0.0.1:$CI_POSTGRES_PORT/$CI_POSTGRES_NAME"
  echo "== PostgreSQL database $CI_POSTGRES_NAME ready in $(($(date +%s) - began)) s"
}

# Safe to call more than once and after a failed start.
ci_postgres_stop() {
  if [ -n "$CI_POSTGRES_NAME" ]; then
    ci_postgres_psql -c "drop database if exists $CI_POSTGRES_NAME with (force)" \
      -c "drop role if exists $CI_POSTGRES_NAME" || true
    echo "== dropped PostgreSQL database $CI_POSTGRES_NAME"
    CI_POSTGRES_NAME=''
    unset TEST_DATABASE_URL
  fi
  if [ -n "$CI_POSTGRES_STARTED_CLUSTER" ]; then
    # shellcheck disable=SC2086 # "version cluster"
    ci_postgres_as_root pg_ctlcluster $CI_POSTGRES_STARTED_CLUSTER stop || true
    CI_POSTGRES_STARTED_CLUSTER=''
  fi
}
