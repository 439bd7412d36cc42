"""`.importlinter` cannot read Python: its lists of apps must say what `memdash.floors` says."""

from __future__ import annotations

import configparser
from pathlib import Path

from memdash.floors import APPS, FLOORS, LENSES

ROOT = Path(__file__).resolve().parents[2]


def contract(name: str) -> configparser.SectionProxy:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    return config[f"importlinter:contract:{name}"]


def modules(value: str) -> list[str]:
    return [line.strip().removeprefix("memdash.") for line in value.splitlines() if line.strip()]


def test_the_floors_contract_lists_the_floors_top_down() -> None:
    layers = [
        sorted(modules(layer.replace("|", "\n"))) for layer in modules(contract("floors")["layers"])
    ]
    assert layers == [sorted(apps) for _, apps in reversed(FLOORS)]


def test_the_roles_contract_covers_every_app() -> None:
    assert modules(contract("roles")["containers"]) == list(APPS)


def test_the_lenses_contract_names_every_lens() -> None:
    assert modules(contract("lenses")["modules"]) == [lens.name for lens in LENSES]


def test_core_may_import_no_other_app() -> None:
    forbidden = set(modules(contract("core")["forbidden_modules"]))
    assert forbidden == {*APPS, "settings"} - {"core"}
