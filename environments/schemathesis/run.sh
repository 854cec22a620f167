#!/usr/bin/env bash
# Schemathesis (pinned in requirements.txt) against the live embedded stack: starts `npm start`
# on a free port with a throw-away DATA_DIR, waits for /readyz, runs every check of
# schemathesis.toml on every operation of the served /openapi.json, and stops the stack.
# Exit status: Schemathesis's (0 only when no check failed), or 1 when the stack does not start.
#
#   npm run schemathesis            (from the checkout; Python 3.10 or newer on PATH)
#
# Schemathesis lives in a virtualenv in ~/.cache/durable-sandbox/schemathesis-<version>, made
# once from PyPI (about a minute).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

version="$(sed -n 's/^schemathesis==//p' "$here/requirements.txt")"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/durable-sandbox/schemathesis-$version"
# A virtualenv cannot be moved (its scripts name its path), so it is made in place and marked
# complete last: an interrupted install is made again.
if [ ! -f "$venv/.complete" ]; then
  echo "== installing Schemathesis $version into $venv (once)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  touch "$venv/.complete"
fi

data="$(mktemp -d -t durable-sandbox-schemathesis-XXXXXX)"
port="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
stack_pid=''
stop_stack() {
  if [ -n "$stack_pid" ] && kill -0 "$stack_pid" 2>/dev/null; then
    kill -TERM "$stack_pid"
    wait "$stack_pid" || true
  fi
  rm -rf "$data"
}
trap stop_stack EXIT

# Limits high enough that the run's creates are not refused by the tenant's limits (they are
# allowed to be: schemathesis.toml lists 429 for the creates), so the creates reach the engine.
PORT="$port" DATA_DIR="$data" LOG_LEVEL=warn \
  TENANT_LIMITS='{"default":{"sandboxes":100000,"creates_per_second":1000,"create_burst":2000,"waits":500}}' \
  node --import tsx tools/start.ts >"$data/stack.log" 2>&1 &
stack_pid=$!
url="http://127.0.0.1:$port"
for _ in $(seq 1 240); do
  if curl -fsS "$url/readyz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$stack_pid" 2>/dev/null; then
    echo "the embedded stack stopped before it was ready:" >&2
    cat "$data/stack.log" >&2
    exit 1
  fi
  sleep 1
done
curl -fsS "$url/readyz" >/dev/null || { echo "the embedded stack was not ready in 240 s" >&2; tail -50 "$data/stack.log" >&2; exit 1; }

echo "== Schemathesis $version against $url/openapi.json (config: environments/schemathesis/schemathesis.toml)"
"$venv/bin/schemathesis" --config-file "$here/schemathesis.toml" run "$url/openapi.json" \
  --header "Authorization: Bearer dev-token" --no-color
