"""The store the inspector's tests browse: the demo's replayed scenario, one correction
written as a new memory and decided by a review, and hostile text in every field a page
shows (keys, values, subjects, a tenant's name, episode text)."""

from __future__ import annotations

from sgam_store import MemoryFact, SGAMStore, Verdict
from sgam_store.harness.baseline import DescriptionMemory
from sgam_store.harness.scenario import load_scenario, replay

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(2)>'
JS_URL = "javascript:alert(3)"
HOSTILE_TENANT = "<script>alert(5)</script>"


def seed(store: SGAMStore) -> int:
    """Fill `store`; return the id of the review decision that superseded answer_style."""
    for _ in replay(store, load_scenario(), baseline=DescriptionMemory("keyword")):
        pass
    style = store.fact_at("acme", "mira", "answer_style")
    assert style is not None
    restated = store.replace_fact(
        MemoryFact(
            tenant_id="acme",
            subject="mira",
            attribute="reply_format",
            value="bullet points, detailed",
            valid_from="2026-06-05T09:00:00Z",
            source_episode_id="thread:t1",
        )
    )
    evidence = {"new": "bullet points, detailed", "old": "detailed (e3)"}
    verdict = Verdict(style.fact_id, "supersedes", "restates the answer style", 0.8, evidence)
    [decision] = store.apply_supersession(restated.fact_id, [verdict], decided_by="test-review")
    for tenant in ("acme", HOSTILE_TENANT):
        episode = store.record_episode(
            tenant,
            f"{SCRIPT} {IMG} {JS_URL}",
            source_kind="user_message",
            speaker=IMG,
            thread_id=SCRIPT,
            occurred_at="2026-06-06T00:00:00Z",
            episode_id=f"x-{len(tenant)}",
        )
        for subject, attribute, value in ((SCRIPT, IMG, JS_URL), (IMG, JS_URL, SCRIPT)):
            store.replace_fact(
                MemoryFact(
                    tenant_id=tenant,
                    subject=subject,
                    attribute=attribute,
                    value=value,
                    valid_from="2026-06-06T00:00:00Z",
                    source_episode_id=episode.episode_id,
                )
            )
    # a correction written under a new key, waiting for the review (LangMem's way)
    store.put(("acme", "mira"), "deadline_note", {"text": "passport deadline is now 2026-06-30"})
    return decision.decision_id
