"""The seed's two episodes as raw text, and the candidates an extractor would return for them."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sgam_store import Episode, SGAMStore

E1_TEXT = "Mira prefers concise answers. Her passport deadline is 2026-07-15."
E2_TEXT = "Mira corrected the deadline. It is now 2026-06-30."
E1_AT = "2026-06-01T09:00:00Z"
E2_AT = "2026-06-03T10:00:00Z"
DEADLINE = ("acme", "mira", "passport_deadline")


def candidate(**fields: Any) -> dict[str, Any]:
    """A well-formed e1 deadline candidate, with `fields` overriding it."""
    base = {
        "evidence": "Her passport deadline is 2026-07-15.",
        "subject": "mira",
        "attribute": "passport_deadline",
        "current_value": None,
        "change": "new",
        "value": "2026-07-15",
        "valid_from": E1_AT,
    }
    return {**base, **fields}


E1_CANDIDATES = [
    candidate(
        evidence="Mira prefers concise answers.",
        subject="Mira",
        attribute="Answer Style",
        value="concise",
        memory_type="preference",
    ),
    candidate(),
]
E2_CANDIDATES = [
    candidate(
        evidence="It is now 2026-06-30.",
        current_value="2026-07-15",
        change="update",
        value="2026-06-30",
        valid_from=E2_AT,
    ),
]


def record_seed(store: SGAMStore, tenant: str = "acme") -> tuple[Episode, Episode]:
    e1 = store.record_episode(
        tenant,
        E1_TEXT,
        source_kind="user_message",
        speaker="mira",
        occurred_at=E1_AT,
        thread_id="t1",
        episode_id=f"{tenant}-e1",
    )
    e2 = store.record_episode(
        tenant,
        E2_TEXT,
        source_kind="user_message",
        speaker="mira",
        occurred_at=E2_AT,
        thread_id="t1",
        episode_id=f"{tenant}-e2",
    )
    return e1, e2


@contextmanager
def fresh_store(**kwargs: Any) -> Iterator[SGAMStore]:
    """A new store on a new SQLite file: hypothesis examples cannot share the test's fixture."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        SGAMStore.from_conn_string(str(Path(tmp) / "memory.db"), **kwargs) as store,
    ):
        store.setup()
        yield store
