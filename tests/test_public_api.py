"""The public surface is pinned, and the layers keep to it.

Changing `sgam_store.__all__` is an API change: it should show up here, in review. Code
outside the package (graphs/, benchmarks/) uses public names only, and no layer below the
BaseStore adapter knows the store class.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import sgam_store
import sgam_store.harness
import sgam_store.testing
import sgam_store.tools

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "sgam_store"

PUBLIC = {
    # the store and its views
    "SGAMStore", "View", "connect",
    # records
    "Fact", "MemoryFact", "MemoryUpdate", "Episode", "ExternalSource", "fact_namespace",
    "Change",
    # the write path
    "MemorySchema", "AttributeSpec", "ConflictPolicy", "Decision", "SourcePrecedence",
    "LatestRecordedWins", "WriteResult", "Rejection", "Supersession", "normalize_subject",
    "normalize_attribute", "extraction_messages", "extract_candidates", "extract_updates",
    # memory managers
    "ConsolidationConfig", "ConsolidationResult", "consolidate", "confirm_candidate",
    "list_candidates", "sweep_candidates", "is_extracted",
    # corrections written as new memories (managers/supersession.py)
    "resolve_supersessions", "create_supersession_manager", "ReviewReport", "Dismissal",
    "SupersessionVerdicts", "SupersessionDecision", "Verdict",
    # embeddings
    "LocalMiniLM", "LOCAL_DIMS", "default_index", "local_available",
    # lifecycle
    "PurgeReport", "RetentionPolicy", "RetentionReport", "parse_policy", "BackfillReport",
    "TransformRegistry", "register_transform",
    # errors
    "SGAMError", "ConflictError", "KeptExistingError", "DimensionMismatchError",
    "EpisodeNotFoundError", "ExtensionLoadError", "FactNotFoundError", "ForeignDatabaseError",
    "ConfigurationError",
    "InvalidCandidateError", "InvalidEpisodeError", "InvalidFactError", "InvalidFilterError",
    "InvalidQueryError",
    "InvalidNamespaceError", "InvalidRetentionPolicyError", "InvalidSchemaError",
    "InvalidTimestampError", "ReadOnlyViewError", "SchemaTransformError", "SchemaVersionError",
    "StoreBusyError", "StoreUnavailableError", "TenantScopeError", "ValueTooLargeError",
    "ValueTooDeepError",
}  # fmt: skip
HARNESS = {"Answer", "DescriptionMemory", "Scenario", "Turn", "compare_modes", "generate",
           "load_scenario", "replay", "tally"}  # fmt: skip
UI = {"create_app", "mask_uri"}  # sgam_store.ui, the `ui` extra: not imported by sgam_store
TOOLS = {"MemoryContext", "MemoryScope", "ScopeError", "consolidation_config", "episode_for",
         "episode_id_for", "memory_tools", "require_store", "resolve_scope", "setting",
         "user_messages"}  # fmt: skip
TESTING = {"EXTRACT_TOOL", "REVIEW_TOOL", "ScriptExhaustedError", "ScriptedChatModel",
           "call_tool", "extract", "say", "to_message", "verdicts"}  # fmt: skip
REALISTIC = {"Realistic", "build"}  # the generated store benchmarks and tests browse
# Layers below the adapter (sgam_store/store.py, sgam_store/views.py).
BELOW_ADAPTER = ["core", "engines", "ledger", "read", "write", "lifecycle"]


def test_the_public_api_is_pinned() -> None:
    assert set(sgam_store.__all__) == PUBLIC
    assert len(sgam_store.__all__) == len(PUBLIC)  # no name listed twice
    assert set(sgam_store.harness.__all__) == HARNESS
    assert set(sgam_store.tools.__all__) == TOOLS
    assert set(sgam_store.testing.__all__) == TESTING
    for name in PUBLIC:
        assert getattr(sgam_store, name) is not None
    for name in HARNESS:
        assert getattr(sgam_store.harness, name) is not None
    for name in TOOLS:
        assert getattr(sgam_store.tools, name) is not None


def _imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) for every `from sgam_store... import name` and `import sgam_store...`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sgam_store"):
            found += [(node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(a.name, "") for a in node.names if a.name.startswith("sgam_store")]
    return found


OUTSIDE = sorted([*ROOT.glob("graphs/*.py"), *ROOT.glob("benchmarks/*.py")])


@pytest.mark.parametrize("path", OUTSIDE, ids=lambda p: str(p.relative_to(ROOT)))
def test_graphs_and_benchmarks_use_public_names_only(path: Path) -> None:
    allowed = {
        "sgam_store": PUBLIC,
        "sgam_store.harness": HARNESS,
        "sgam_store.tools": TOOLS,
        "sgam_store.ui": UI,
        # the realistic store's modules, which the benchmarks draw memories from
        "sgam_store.testing": TESTING | {"phrases", "realistic"},
        "sgam_store.testing.realistic": REALISTIC,
    }
    private = [
        f"{module}.{name}"
        for module, name in _imports(path)
        if name not in allowed.get(module, set())
    ]
    assert private == []


def _package_files(*layers: str) -> list[Path]:
    return sorted(p for layer in layers for p in (PACKAGE / layer).rglob("*.py"))


@pytest.mark.parametrize(
    "path", _package_files(*BELOW_ADAPTER), ids=lambda p: str(p.relative_to(ROOT))
)
def test_layers_below_the_adapter_never_name_the_store(path: Path) -> None:
    """Not even for a type annotation: they receive an engine, a fact writer or a ranker."""
    assert [m for m, _ in _imports(path) if m == "sgam_store.store"] == []
    assert [n for m, n in _imports(path) if m == "sgam_store" and n == "SGAMStore"] == []


PRIVATE_REACH = re.compile(r"\bstore\._[a-z]\w*")


@pytest.mark.parametrize(
    "path",
    [p for p in sorted(PACKAGE.rglob("*.py")) if p.name != "store.py"] + OUTSIDE,
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_nothing_outside_the_adapter_reaches_into_a_store(path: Path) -> None:
    assert PRIVATE_REACH.findall(path.read_text()) == []
