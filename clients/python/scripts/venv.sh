#!/usr/bin/env bash
# Prints the path of the Python client's development virtualenv, made once from PyPI with the
# exact pins of clients/python/requirements.txt into
# ~/.cache/durable-sandbox/python-client-<first 12 hex digits of the file's SHA-256>, so a change
# of a pin makes a new one and an unchanged file reuses it (as environments/schemathesis/run.sh).
# The client itself is installed into it from the checkout (pip install -e), on every call.
#
#   venv="$(bash clients/python/scripts/venv.sh)"     (Python 3.10 or newer as python3)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
hash="$(sha256sum "$here/requirements.txt" | cut -c1-12)"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/durable-sandbox/python-client-$hash"
# A virtualenv cannot be moved (its scripts name its path), so it is made in place and marked
# complete last: an interrupted install is made again.
if [ ! -f "$venv/.complete" ]; then
  echo "== installing the Python client's pins into $venv (once)" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
  touch "$venv/.complete"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --no-build-isolation \
  -e "$here" >&2
echo "$venv"
