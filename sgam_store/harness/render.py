"""Terminal and JSON forms of facts, ledgers, timelines and replays, for the `sgam` CLI.

Tables are sized for 100-120 column terminals: timestamps are short (UTC, minutes,
date only at midnight), no column is cut with an ellipsis (long cells fold onto more
lines), and a fact is `#fact_id` everywhere, so a `supersedes` column reads as a chain.
Identity cells (fact numbers, keys, times, sources) never fold: a narrow console takes
room from values and text instead, so a key is never split mid-word. JSON keeps full
ISO-8601 timestamps.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from itertools import groupby
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from sgam_store.core.models import Fact
from sgam_store.harness.scenario import Answer, Reply, Turn

VERDICT_STYLE = {"ok": "green", "stale": "bold red", "missing": "red", "wrong": "red"}
VERDICT_MARK = {"ok": "✓", "stale": "✗ stale", "missing": "✗ no answer", "wrong": "✗ wrong"}


def short(value: datetime | None, empty: str = "open") -> str:
    """'2026-06-03 10:00' (UTC), '2026-06-03' at midnight, seconds only when present."""
    if value is None:
        return empty
    v = value.astimezone(UTC)
    if (v.hour, v.minute, v.second, v.microsecond) == (0, 0, 0, 0):
        return v.strftime("%Y-%m-%d")
    return v.strftime("%Y-%m-%d %H:%M:%S" if v.second or v.microsecond else "%Y-%m-%d %H:%M")


def key_of(fact: Fact) -> str:
    return f"{fact.subject}.{fact.attribute}" if fact.subject else fact.attribute


def ref(fact_id: int | None) -> str:
    return "" if fact_id is None else f"#{fact_id}"


def shown(value: Any) -> str:
    """A value as text: strings as they are, anything else as JSON, None as a dash."""
    if value is None:
        return "—"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def clip(text: str, limit: int = 24) -> str:
    """For labels that must stay on one line (timeline); tables show values whole."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fact_row(fact: Fact) -> dict[str, Any]:
    """A fact for machines: identity, value, validity, supersedes link and source."""
    return {
        "fact_id": fact.fact_id,
        "tenant": fact.tenant_id,
        "key": key_of(fact),
        "value": fact.value,
        "valid_from": fact.valid_from.isoformat(),
        "valid_to": fact.valid_to.isoformat() if fact.valid_to else None,
        "supersedes": fact.supersedes_fact_id,
        "source": fact.source_episode_id,
    }


NUMBERS_NOTE = (
    "#N is a fact's id: the ledger row number of its first version. Closing or shortening "
    "a fact writes a new row (the old one stays for --known-at), and every key draws from "
    "one sequence, so the numbers of one key or tenant skip."
)
# Columns whose cells are identities or instants: kept whole (see the module doc).
WHOLE = frozenset(
    {"fact", "key", "valid from", "valid to", "supersedes", "source", "tenant", "at", "field"}
)


def report_row(name: str, value: Any) -> tuple[str, str]:
    """A lifecycle report's field as read aloud. `deleted.facts` counts rows of the facts
    table (versions), `fact_ids` lists facts, shown as `#N` as everywhere else; the label
    says which, so 5 rows beside 2 facts is not read as a contradiction."""
    *outer, last = name.split(".")
    prefix = "".join(f"{part} " for part in outer if part != "deleted")
    if outer and outer[-1] == "deleted":
        return f"{prefix}rows deleted from {last}", shown(value)
    if last.endswith("fact_ids"):
        label = f"{prefix}{last.removesuffix('fact_ids').replace('_', ' ')}facts"
        return label, ", ".join(ref(i) for i in value)
    label = f"{prefix}{last.replace('_ids', 's').replace('_', ' ')}"
    return label, ", ".join(map(str, value)) if isinstance(value, list) else shown(value)


def plain_table(title: str | None, *columns: str, whole: Sequence[str] = ()) -> Table:
    """A compact table; the `whole` columns keep each cell on one line."""
    return _table(title, *columns, whole=whole)


def _table(title: str | None, *columns: str, whole: Sequence[str] = ()) -> Table:
    """A compact table (one space and a separator between columns) that folds long cells
    instead of cutting them; when it is too wide, rich narrows the widest columns first,
    never the WHOLE (identity) columns nor those named in `whole`."""
    table = Table(
        title=title,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 1, 0, 0),
        title_justify="left",
        title_style="bold",
    )
    for name in columns:
        table.add_column(name, overflow="fold", no_wrap=name in WHOLE or name in whole)
    return table


def facts_table(
    facts: Iterable[Fact], title: str | None = None, *, fresh: frozenset[int] = frozenset()
) -> Table:
    """Facts of one tenant; closed ones dimmed, `fresh` fact ids (just written) bold."""
    columns = ("fact", "key", "value", "valid from", "valid to", "supersedes", "source")
    table = _table(title, *columns)
    for fact in facts:
        table.add_row(
            ref(fact.fact_id),
            key_of(fact),
            shown(fact.value),
            short(fact.valid_from),
            short(fact.valid_to),
            ref(fact.supersedes_fact_id),
            fact.source_episode_id,
            style="bold" if fact.fact_id in fresh else "dim" if fact.valid_to else "",
        )
    return table


def ledger_tables(facts: Sequence[Fact], title: str) -> Group:
    """One table per tenant (the isolation boundary), under a title line."""
    tables = [
        facts_table(group, f"tenant {tenant}")
        for tenant, group in groupby(facts, key=lambda f: f.tenant_id)
    ]
    return Group(Text(title, style="bold"), *tables)


def history_view(facts: Sequence[Fact], said: dict[int, str]) -> Group:
    """One key's facts with what their source said, then the supersedes chain. Memories of
    other keys it superseded (a correction written as a new memory) come first, keyed."""
    last = facts[-1]
    title = f"{last.tenant_id} · {key_of(last)}"
    keyed = len({key_of(f) for f in facts}) > 1
    columns = ("fact", "value", "valid from", "valid to", "supersedes", "source", "said")
    table = _table(title, *(("key", *columns) if keyed else columns))
    for fact in facts:
        table.add_row(
            *((key_of(fact),) if keyed else ()),
            ref(fact.fact_id),
            shown(fact.value),
            short(fact.valid_from),
            short(fact.valid_to),
            ref(fact.supersedes_fact_id),
            fact.source_episode_id,
            said.get(fact.fact_id, ""),
            style="" if fact.valid_to is None else "dim",
        )
    return Group(table, Text("supersedes chain: " + chain(facts)))


def chain(facts: Sequence[Fact]) -> str:
    """'#3 2026-06-30 (e2) ← #1 2026-07-15 (e1)': from the newest fact back through
    `supersedes_fact_id` (facts before the chain's start, like a delayed one, stand alone)."""
    by_id = {f.fact_id: f for f in facts}
    links, fact = [], max(facts, key=lambda f: f.valid_from)
    while fact is not None:
        links.append(f"{ref(fact.fact_id)} {shown(fact.value)} ({fact.source_episode_id})")
        fact = by_id.get(fact.supersedes_fact_id) if fact.supersedes_fact_id else None
    return " ← ".join(links)


# ---------------------------------------------------------------- timeline

BAR_STYLES = ("cyan", "magenta", "yellow", "green", "blue", "red")


def timeline(facts: Sequence[Fact], width: int) -> Group:
    """Validity intervals as bars, one block per key, each key on its own time scale."""
    blocks: list[RenderableType] = []
    for _, group in groupby(facts, key=lambda f: (f.tenant_id, f.subject, f.attribute)):
        rows = list(group)
        title = Text(f"{rows[0].tenant_id} · {key_of(rows[0])}", style="bold")
        blocks += [title, *key_timeline(rows, width)]
        blocks.append(Text(""))
    return Group(*blocks)


def key_timeline(facts: Sequence[Fact], width: int) -> list[Text]:
    """Bars for one key's facts over [first start, last boundary + room for open ones]."""
    labels = [f"{ref(f.fact_id)} {clip(shown(f.value))} {f.source_episode_id}" for f in facts]
    pad = max(len(label) for label in labels) + 2
    span = max(10, width - pad - 1)
    points = sorted({f.valid_from for f in facts} | {f.valid_to for f in facts if f.valid_to})
    start, last = points[0], points[-1]
    room = (last - start) / 4 if last > start else timedelta(days=1)
    end = last + room if any(f.valid_to is None for f in facts) else last  # room for "open"

    def col(at: datetime) -> int:
        return round((at - start) / (end - start) * span)

    lines = []
    for i, (fact, label) in enumerate(zip(facts, labels, strict=True)):
        left = col(fact.valid_from)
        right = max(left + 1, col(fact.valid_to) if fact.valid_to else span)
        line = Text(label.ljust(pad) + " " * left)
        line.append("█" * (right - left), style=BAR_STYLES[i % len(BAR_STYLES)])
        line.append("→" if fact.valid_to is None else "")
        lines.append(line)
    lines.append(_axis(points, col, pad, span))
    return lines


def _axis(points: list[datetime], col: Callable[[datetime], int], pad: int, span: int) -> Text:
    """Boundary dates under the bars, inside the bars' width; a label that would overlap
    the previous one is left out (the tables show every boundary)."""
    axis, free = [" "] * (pad + span + 1), 0
    for point in points:
        label = short(point)
        at = min(pad + col(point), len(axis) - len(label))
        if at >= free:
            axis[at : at + len(label)] = label
            free = at + len(label) + 2
    return Text("".join(axis).rstrip(), style="dim")


# ---------------------------------------------------------------- replay


def turn_header(turn: Turn) -> Text:
    spec = turn.spec
    where = "background manager" if turn.background else f"turn {turn.number}"
    path = "" if turn.background else f" · {spec.path} path"
    who = f" · {spec.speaker}" if spec.speaker else ""
    said = short(turn.episode.occurred_at)
    if turn.background and spec.extracted_at:
        said += f", extracted {short(datetime.fromisoformat(spec.extracted_at))}"
    text = Text(f"\n{where} · {spec.id} · {spec.tenant}{who} · {said}")
    text.stylize("bold")
    text.append(path, style="dim")
    return text


def turn_outcome(turn: Turn) -> list[RenderableType]:
    """What the writer did with the turn, one line per fact or rejection."""
    said = Text(f'  "{turn.spec.text}"', style="italic")
    if turn.result is None:
        return [said, Text("  recorded; its extraction waits for the background manager")]
    lines: list[RenderableType] = [] if turn.background else [said]
    for fact in turn.result.written:
        line = f"  wrote {ref(fact.fact_id)} {key_of(fact)} = {shown(fact.value)}, "
        lines.append(Text(line + f"valid {short(fact.valid_from)} → {short(fact.valid_to)}"))
    for s in turn.result.superseded:
        line = f"  closed {ref(s.old.fact_id)} {key_of(s.old)} = {shown(s.old.value)} "
        lines.append(Text(line + f"at {short(s.old.valid_to)}, superseded by {ref(s.new.fact_id)}"))
    lines += [Text(f"  rejected ({r.kind}): {r.reason}", style="red") for r in turn.result.rejected]
    lines += [Text(f"  no change: {u.subject}.{u.attribute}") for u in turn.result.unchanged]
    return lines


def _reply_cell(reply: Reply) -> Text:
    text = Text(shown(reply.value))
    if reply.source:
        text.append(f" ({reply.source})", style="dim")
    text.append(f" {VERDICT_MARK[reply.verdict]}", style=VERDICT_STYLE[reply.verdict])
    return text


def answers_table(answers: Sequence[Answer], title: str) -> Table:
    """Each question, the instant it asks about, the expected answer and both memories'."""
    columns = ("tenant", "question", "at", "expected", "description memory", "SGAM")
    table = _table(title, *columns)
    table.caption = (
        "description memory: the value its top-1 episode (in parentheses) states for the key; "
        "SGAM: the fact valid at that instant (its source episode)"
    )
    table.caption_justify = "left"
    for a in answers:
        q = a.question
        at = short(datetime.fromisoformat(q.at)) if q.at else "now"
        table.add_row(
            q.tenant, q.ask, at, shown(q.expect), _reply_cell(a.baseline), _reply_cell(a.sgam)
        )
    return table


def verdicts_table(verdicts: dict[str, dict[str, int]], baseline_label: str) -> Table:
    """Verdict counts per memory; the stale column is the one SGAM exists to zero."""
    table = _table(None, "memory", "answers", "ok", "stale", "no answer", "wrong")
    names = {"baseline": f"description memory ({baseline_label})", "sgam": "SGAM (fact_at)"}
    for who, counts in verdicts.items():
        cells = [counts[v] for v in ("ok", "stale", "missing", "wrong")]
        stale = Text(str(counts["stale"]), style="bold red" if counts["stale"] else "green")
        table.add_row(names[who], str(sum(cells)), str(cells[0]), stale, *map(str, cells[2:]))
    return table
