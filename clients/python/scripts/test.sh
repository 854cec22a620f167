#!/usr/bin/env bash
# Ruff's lint and format check of clients/python, then the Python client's tests (pytest,
# clients/python/tests) against the embedded stack they start from this checkout
# (clients/python/tests/stack.py, as environments/schemathesis/run.sh starts it), in the virtualenv of
# clients/python/scripts/venv.sh (made once from PyPI). Extra arguments go to pytest.
# Exit status: ruff's when it finds something, else pytest's.
#
#   npm run python-client:test            (from the checkout; Python 3.10 or newer as python3)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
venv="$(bash "$here/scripts/venv.sh")"
cd "$here"
# Lint and format (ruff, pinned; pyproject.toml [tool.ruff]) before the tests: a finding fails.
"$venv/bin/ruff" check --no-cache .
"$venv/bin/ruff" format --no-cache --check .
exec "$venv/bin/python" -m pytest -p no:cacheprovider "$@"
