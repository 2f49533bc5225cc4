"""The engine seam holds: SQL only inside engines, every engine supplies the interface,
and nothing engine-neutral reaches into the store or names an engine."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from functools import partial
from pathlib import Path

import pytest

from sgam_store.core.engine import STATEMENTS, Engine
from sgam_store.engines import common

PACKAGE = Path(__file__).resolve().parent.parent / "sgam_store"
ENGINES = ("sqlite", "postgres")
# Statements and database features that must not appear outside sgam_store/engines.
SQL = re.compile(
    r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|PRAGMA|BEGIN IMMEDIATE|json_each|"
    r"fts5|vec0|bm25)\b"
)
# Calls of the interface from neutral code: engine.<set>.<fn>( and tx.versions.<fn>(.
CALL = re.compile(r"\bengine\.(\w+)\.(\w+)\(|\btx\.versions\.(\w+)\(|\bversions\.(\w+)\(")


def neutral_modules() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if "engines" not in p.relative_to(PACKAGE).parts]


def code_of(path: Path) -> str:
    """Source without comments: a comment may name a statement, code may not."""
    return "\n".join(line.split("#", 1)[0] for line in path.read_text().splitlines())


def test_no_sql_outside_engines() -> None:
    offenders = {
        str(p.relative_to(PACKAGE)): SQL.findall(code_of(p))
        for p in neutral_modules()
        if SQL.search(code_of(p))
    }
    assert offenders == {}


def test_only_the_adapter_names_an_engine_package() -> None:
    importing = {
        str(p.relative_to(PACKAGE))
        for p in neutral_modules()
        if re.search(r"from sgam_store\.engines\.\w+|import sgam_store\.engines\.", p.read_text())
    }
    # The package root re-exports `connect` (SQLite) as public API; nothing else may.
    assert importing <= {"__init__.py"}


def test_no_private_reach_into_the_store() -> None:
    reach = re.compile(r"\bstore\._\w+")
    offenders = [
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if p.name != "store.py" and reach.search(p.read_text())
    ]
    assert offenders == []


def test_neutral_code_calls_only_the_interface() -> None:
    called: set[tuple[str, str]] = set()
    for path in neutral_modules():
        for group, name, tx_fn, versions_fn in CALL.findall(code_of(path)):
            if group in STATEMENTS:
                called.add((group, name))
            elif tx_fn or versions_fn:
                called.add(("versions", tx_fn or versions_fn))
    outside = {(g, n) for g, n in called if n not in STATEMENTS[g]}
    assert outside == set()
    assert ("versions", "key_tails") in called  # the scan finds calls at all


@pytest.mark.parametrize("engine_name", ENGINES)
@pytest.mark.parametrize("group", sorted(STATEMENTS))
def test_every_engine_supplies_each_statement(engine_name: str, group: str) -> None:
    module = importlib.import_module(f"sgam_store.engines.{engine_name}.{group}")
    reference = importlib.import_module(f"sgam_store.engines.sqlite.{group}")
    for name in sorted(STATEMENTS[group]):
        function = getattr(module, name, None)
        assert callable(function), f"{engine_name}.{group} lacks {name}"
        params = list(inspect.signature(function).parameters)
        assert params == list(inspect.signature(getattr(reference, name)).parameters), name


@pytest.mark.parametrize("engine_name", ENGINES)
def test_every_engine_has_the_engine_methods(engine_name: str) -> None:
    module = importlib.import_module(f"sgam_store.engines.{engine_name}.engine")
    cls = next(
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj) and obj.__module__ == module.__name__ and hasattr(obj, "setup")
    )
    wanted = [n for n in vars(Engine) if not n.startswith("_")]
    wanted += list(Engine.__annotations__)
    missing = [n for n in wanted if not hasattr(cls, n)]
    assert missing == []
    for group in STATEMENTS:
        assert getattr(cls, group).__name__ == f"sgam_store.engines.{engine_name}.{group}"


@pytest.mark.parametrize("engine_name", ENGINES)
def test_no_engine_redefines_a_portable_statement(engine_name: str) -> None:
    """A statement written once in engines/common/ reaches each engine bound to its
    dialect, never as a local copy (a twin that could drift; tests/test_engine_drift.py
    compares what the bound ones return)."""
    copies = []
    for info in pkgutil.iter_modules(common.__path__):
        portable = importlib.import_module(f"{common.__name__}.{info.name}")
        try:
            module = importlib.import_module(f"sgam_store.engines.{engine_name}.{info.name}")
        except ModuleNotFoundError:
            continue
        for name, value in vars(portable).items():
            own = inspect.isfunction(value) and value.__module__ == portable.__name__
            if own and not name.startswith("_") and "d" in inspect.signature(value).parameters:
                bound = getattr(module, name, None)
                if not (isinstance(bound, partial) and bound.func is value):
                    copies.append(f"{info.name}.{name}")
    assert copies == []
