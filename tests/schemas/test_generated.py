"""The schemas generated from the formats' typed structs (scripts/schemas.py) are committed as
the structs make them, and the server's fast decoder of snapshots reads the contract's fields."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from memdash.allocations.logic.document import contract, raw
from memdash.allocations.logic.document.rows import COUNTERS, INDEXES
from memdash.churn.logic import contract as churn
from memdash.cycles.logic import contract as retain_cycles
from memdash.foom.logic import contract as sessions
from memdash.foom.logic import exitinfo_contract as exitinfo

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_schemas_are_what_the_structs_make():
    run = subprocess.run(
        [sys.executable, "scripts/schemas.py", "--check"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr


GENERATED = [contract, churn, sessions, retain_cycles, exitinfo]


@pytest.mark.parametrize("make", [module.json_schema for module in GENERATED])
def test_the_generated_schemas_are_valid_schemas(make):
    jsonschema.Draft202012Validator.check_schema(make())


def test_the_fast_decoder_reads_the_contract_fields():
    # raw.py decodes rows into structs of its own (defaults that need no conversion): the same
    # fields as the contract's allocation row, and the same top-level keys as its document.
    assert set(raw._Row.__struct_fields__) == set(contract.Allocation.__struct_fields__)
    assert set(COUNTERS) | set(INDEXES) | {"category"} == set(contract.Allocation.__struct_fields__)
    assert set(raw._Document.__struct_fields__) == set(contract.Snapshot.__struct_fields__)
