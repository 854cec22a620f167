"""The generated models match the document the API serves, and the error classes its codes."""

from __future__ import annotations

import json
import subprocess
import typing
from pathlib import Path

import httpx

from durable_sandbox import ERROR_CLASSES, models

from .stack import ROOT, Stack

HERE = Path(__file__).resolve().parents[1]


def test_models_py_is_what_the_generator_makes_of_api_openapi_json(tmp_path: Path) -> None:
    fresh = tmp_path / "models.py"
    subprocess.run(
        ["bash", str(HERE / "scripts" / "models.sh"), str(fresh)], check=True, capture_output=True
    )
    checked_in = (HERE / "src" / "durable_sandbox" / "models.py").read_text()
    assert fresh.read_text() == checked_in, (
        "clients/python/src/durable_sandbox/models.py differs from what src/api/openapi.json "
        "generates: run `npm run python-client:models` and commit it"
    )


def test_the_document_generated_from_is_the_served_one(stack: Stack) -> None:
    served = httpx.get(f"{stack.url}/openapi.json").json()
    assert served == json.loads((ROOT / "src" / "api" / "openapi.json").read_text())


def test_every_error_code_of_the_document_has_its_class() -> None:
    codes = set(typing.get_args(models.Error1.model_fields["code"].annotation))
    assert set(ERROR_CLASSES) == codes
    for code, cls in ERROR_CLASSES.items():
        assert cls.code == code
