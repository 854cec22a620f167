"""The install line of docs/python-client.md works from the checkout, in a fresh virtualenv."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from .stack import ROOT

INSTALL_TIMEOUT_S = 600


def test_the_documented_pip_install_line_installs_the_package(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "python-client.md").read_text()
    line = re.search(r"^ {4}(pip install \S+)$", page, re.M)
    assert line, "docs/python-client.md shows no `pip install` line"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    command = f"{venv}/bin/{line.group(1)} --quiet --disable-pip-version-check"
    done = subprocess.run(
        command, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S
    )
    assert done.returncode == 0, done.stderr
    probe = "import durable_sandbox as d; print(d.Client.__name__, d.AsyncClient.__name__)"
    out = subprocess.run(
        [f"{venv}/bin/python", "-c", probe], capture_output=True, text=True, cwd=tmp_path
    )
    assert out.stdout.strip() == "Client AsyncClient", out.stderr
