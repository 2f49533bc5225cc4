"""Retention: a policy per fact and a class per episode, applied by an idempotent job.

One grammar for both (the one `schemas.check_retention` accepts for memory types):

- "keep" (and a fact with no policy): the job never touches it.
- "expire_after:<ISO-8601 duration>", e.g. "expire_after:P30D" or "expire_after:PT12H",
  counted from `recorded_at` (when the store learned it; reads do not extend it, unlike
  TTL). A fact *expires*: its open version is closed at recorded_at + duration and its
  history is kept. An episode has no validity to close, so an expired episode is
  *erased* (row and text); facts extracted from it follow their own policy and keep
  citing its id.
- "session_only": the data of one conversation thread. `end_session(tenant, thread)`
  records the end and *erases* that thread's session_only episodes and facts recorded
  up to then (closing would keep them in history, and session memory must not outlive
  the session). A fact belongs to the session of its source: an episode of the thread,
  or the "thread:<id>" marker a `put` records inside a graph run. Each job run repeats
  this for every ended session, so late writes are caught; ending a resumed thread
  again covers what was recorded since.

Durations are ISO-8601 as pydantic reads them (weeks to seconds; a year is 365 days,
a month 30); they must be positive. A stored policy that does not parse is reported
and skipped, never guessed.

The job (`SGAMStore.run_retention`) also closes facts whose TTL passed (`sweep_ttl`),
all in one transaction. `now` moves only the policy clock (TTL uses the store's
clock). It is idempotent: a second run at the same `now` changes nothing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

from pydantic import TypeAdapter, ValidationError

from sgam_store import ledger
from sgam_store.core import clock, namespaces
from sgam_store.core.errors import InvalidEpisodeError, InvalidRetentionPolicyError
from sgam_store.core.models import PurgeReport

KEEP, SESSION_ONLY, EXPIRE_AFTER = "keep", "session_only", "expire_after"
_DURATION = TypeAdapter(timedelta)


@dataclass(frozen=True)
class RetentionPolicy:
    """A parsed policy: its kind, and for expire_after how long after recorded_at."""

    kind: str
    after: timedelta | None = None


def parse_duration(text: str) -> timedelta:
    """A positive ISO-8601 duration ("P30D", "PT12H", "P2W"), or a one-line error."""
    try:
        duration = _DURATION.validate_python(text) if text.startswith("P") else None
    except ValidationError:
        duration = None
    if duration is None or duration <= timedelta(0):
        raise InvalidRetentionPolicyError(
            f"{text!r} is not a positive ISO-8601 duration such as P30D, PT12H or P2W"
        )
    return duration


def parse_policy(text: str | None) -> RetentionPolicy:
    """Parse a fact's retention_policy or an episode's retention_class (None = keep)."""
    if text is None or text == KEEP:
        return RetentionPolicy(KEEP)
    if text == SESSION_ONLY:
        return RetentionPolicy(SESSION_ONLY)
    kind, sep, duration = text.partition(":")
    if kind == EXPIRE_AFTER and sep:
        return RetentionPolicy(EXPIRE_AFTER, parse_duration(duration))
    raise InvalidRetentionPolicyError(
        f"unknown retention policy {text!r}: use 'keep', 'session_only' or "
        "'expire_after:<ISO-8601 duration>' such as 'expire_after:P30D'"
    )


@dataclass
class RetentionReport:
    """What one retention run (or end_session) changed, and what it could not read."""

    now: str
    ttl_closed: int = 0
    expired_fact_ids: list[int] = field(default_factory=list)  # closed, history kept
    erased: PurgeReport = field(default_factory=PurgeReport)
    invalid: list[dict[str, Any]] = field(default_factory=list)  # skipped policies

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _policies(
    rows: list[tuple[str, int]], table: str, report: RetentionReport
) -> list[tuple[str, RetentionPolicy]]:
    """The distinct policies stored in `table`; unparseable ones go to `report.invalid`."""
    found: list[tuple[str, RetentionPolicy]] = []
    for text, count in rows:
        try:
            found.append((text, parse_policy(text)))
        except InvalidRetentionPolicyError as exc:
            report.invalid.append(
                {"table": table, "policy": text, "rows": count, "error": str(exc)}
            )
    return found


def _cutoff(now: str, after: timedelta) -> str | None:
    """Latest recorded_at that is due at `now`; None when the duration outlasts the calendar."""
    try:
        return clock.shift(now, -after)
    except OverflowError:
        return None


def _expire_facts(tx: ledger.Tx, policy: str, after: timedelta, now: str) -> list[int]:
    """Close open facts due under `policy` at recorded_at + after (as TTL expiry does)."""
    cutoff = _cutoff(now, after)
    if cutoff is None:
        return []
    due = tx.engine.retention.open_facts_due(tx.cur, policy, cutoff)
    for row in due:
        ledger.close_row(tx, row, clock.shift(row.recorded_at, after))
    return [row.fact_id for row in due]


def _expired_episodes(
    tx: ledger.Tx, policy: str, after: timedelta, now: str
) -> list[tuple[str, str]]:
    cutoff = _cutoff(now, after)
    if cutoff is None:
        return []
    return tx.engine.retention.episodes_due(tx.cur, policy, cutoff)


def _session_data(
    tx: ledger.Tx, tenant_id: str | None = None, thread_id: str | None = None
) -> tuple[list[int], list[tuple[str, str]]]:
    """(fact_ids, (tenant_id, episode_id)s) that are session_only and recorded before their
    thread ended."""
    statements = tx.engine.retention
    facts = statements.ended_session_facts(tx.cur, SESSION_ONLY, tenant_id, thread_id)
    episodes = statements.ended_session_episodes(tx.cur, SESSION_ONLY, tenant_id, thread_id)
    return facts, episodes


def run_retention(tx: ledger.Tx, now: str) -> RetentionReport:
    """Apply TTL and every stored policy once, inside `tx` (see the module docstring)."""
    statements = tx.engine.retention
    report = RetentionReport(now=now, ttl_closed=ledger.close_expired(tx))
    for text, policy in _policies(statements.fact_policies(tx.cur), "facts", report):
        if policy.after is not None:  # expire_after
            report.expired_fact_ids += _expire_facts(tx, text, policy.after, now)
    expired: list[tuple[str, str]] = []
    for text, policy in _policies(statements.episode_classes(tx.cur), "episodes", report):
        if policy.after is not None:  # expire_after
            expired += _expired_episodes(tx, text, policy.after, now)
    facts, episodes = _session_data(tx)
    report.erased = tx.engine.erasure.erase(tx.cur, facts, [*episodes, *expired])
    return report


def end_session(tx: ledger.Tx, tenant_id: str, thread_id: str) -> RetentionReport:
    """Record that a thread's session ended now and erase its session_only data."""
    namespaces.check_item_namespace((tenant_id,))
    if not isinstance(thread_id, str) or not thread_id:
        raise InvalidEpisodeError("thread_id must be a non-empty string")
    tx.engine.retention.record_session_end(tx.cur, tenant_id, thread_id, tx.now)
    facts, episodes = _session_data(tx, tenant_id, thread_id)
    return RetentionReport(now=tx.now, erased=tx.engine.erasure.erase(tx.cur, facts, episodes))
