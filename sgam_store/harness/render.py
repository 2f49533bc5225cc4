"""Terminal and JSON forms of facts, ledgers, timelines and replays, for the `sgam` CLI.

Tables fit the console (`FittedTable`): the value column is never dropped or squeezed to
slivers. When a table is too wide, sources are cut with an ellipsis and keys and
intervals fold onto more lines first, so a value keeps at least `VALUE_MIN` columns;
values and text then fold into the room left. Times are UTC to the second
(`clock.readable`), with microseconds only where two instants of one listing would
otherwise read the same; a fact is `#fact_id` everywhere, and `#5 ← #2` says that fact 5
supersedes fact 2. JSON keeps everything whole: one record per fact in every command
(`fact_record`, `Fact`'s own field names), times in the store's full-precision UTC text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from itertools import groupby
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Column, Table
from rich.text import Text

from sgam_store.core import clock, jsontext
from sgam_store.core.models import Fact
from sgam_store.harness.scenario import Answer, Reply, Turn

VERDICT_STYLE = {"ok": "green", "stale": "bold red", "missing": "red", "wrong": "red"}
VERDICT_MARK = {"ok": "✓", "stale": "✗ stale", "missing": "✗ no answer", "wrong": "✗ wrong"}
# A listing shows this much of a value (LangMem's run to kilobytes); `sgam get` and --json
# show it whole.
VALUE_CHARS = 240


def when(value: clock.Timestamp | None, empty: str = "open") -> str:
    """One instant as tables show it: '2026-06-03T10:00:00Z' (`clock.readable_one`)."""
    return empty if value is None else str(clock.readable_one(value))


def readable(instants: Iterable[clock.Timestamp | None]) -> dict[Any, str]:
    """The instants of one listing, each as it reads there (`clock.readable`: microseconds
    only where two would read alike), by instant; None (an open end) reads 'open'."""
    listed = list(instants)
    return dict(zip(listed, (t or "open" for t in clock.readable(listed)), strict=True))


def key_of(fact: Fact) -> str:
    return f"{fact.subject}.{fact.attribute}" if fact.subject else fact.attribute


def ref(fact_id: int | None) -> str:
    return "" if fact_id is None else f"#{fact_id}"


def lineage(fact: Fact) -> str:
    """'#5 ← #2': the fact and the one it supersedes (one column, so the chain reads in
    it and a table keeps its room for the value)."""
    return ref(fact.fact_id) + (
        f" ← {ref(fact.supersedes_fact_id)}" if fact.supersedes_fact_id else ""
    )


def shown(value: Any) -> str:
    """A value as text: strings as they are, LangMem's `{"content": text}` as its text,
    anything else as JSON, None as a dash."""
    if value is None:
        return "—"
    if isinstance(value, dict) and set(value) == {"content"} and isinstance(value["content"], str):
        return value["content"]
    return value if isinstance(value, str) else jsontext.text(value)  # any depth


def listed(value: Any, limit: int = VALUE_CHARS) -> str:
    """A value in a listing: `shown`, cut after `limit` characters with how many more."""
    text = shown(value)
    if len(text) <= limit:
        return text
    more = len(text) - limit
    return f"{text[:limit]}… (+{more:,} character{'' if more == 1 else 's'})"


def clip(text: str, limit: int = 24) -> str:
    """For labels that must stay on one line (timeline); tables show values whole."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


FACT_FIELDS = tuple(Fact.model_fields)


def fact_record(fact: Fact) -> dict[str, Any]:
    """A fact for machines, the same record in every command's --json: `Fact`'s fields by
    their own names, its times in the store's UTC text at full precision
    ('2026-06-03T10:00:00.000000Z', as `store.changes()` gives them)."""
    record = {name: getattr(fact, name) for name in FACT_FIELDS}  # no deep copy of values
    record["namespace"] = list(fact.namespace)
    return {k: clock.fmt(v) if isinstance(v, datetime) else v for k, v in record.items()}


NUMBERS_NOTE = (
    "#N is a fact's id: the ledger row number of its first version; #5 ← #2 says fact 5 "
    "supersedes fact 2. Closing or shortening a fact writes a new row (the old one stays "
    "for --known-at), and every key draws from one sequence, so the numbers of one key or "
    "tenant skip."
)
# Columns whose cells are identities or instants: one line each while the table fits.
WHOLE = frozenset({"fact", "key", "valid from", "valid to", "source", "tenant", "at", "field"})
# What identity columns give up, step by step, while the table would leave a value less
# than VALUE_MIN columns: (column, how its cells then overflow, its width after the step;
# None: its longest word, so it breaks between words only, "from →" / "to"). A source is
# cut first ("msg:3f2c81d0-…"; --json and `history` keep it whole); intervals and
# supersedes chains then break between words, keys and namespaces fold onto more lines,
# whole; in a narrow terminal, times fold after
# their date ("2026-06-03T" / "10:00:00Z"), and last the value itself narrows to
# VALUE_LEAST.
STEPS: tuple[tuple[str, str, int | None], ...] = (
    ("source", "ellipsis", 14),
    ("valid", "fold", None),
    ("fact", "fold", None),
    ("namespace", "fold", 16),
    ("key", "fold", 16),
    ("tenant", "fold", 10),
    ("at", "fold", 11),
    ("valid from", "fold", 11),
    ("valid to", "fold", 11),
    ("valid", "fold", 11),
    ("source", "ellipsis", 8),
    ("key", "fold", 10),
    ("namespace", "fold", 10),
)
TIMES = frozenset({"at", "valid from", "valid to"})
VALUE_MIN = 24  # columns a value (or other text) keeps, where its text is that long
VALUE_LEAST = 16  # ... in a terminal too narrow for that


class FittedTable(Table):
    """A rich table that fits its columns to the console before rendering (`fit_columns`):
    rich's own fitting narrows the widest columns, which on real rows (uuid keys,
    `msg:<uuid>` sources) left the value a few characters wide, or none."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not hasattr(self, "declared"):  # as built: a render fits from these, every time
            self.declared = [(c.overflow, c.no_wrap) for c in self.columns]
        for column, (overflow, no_wrap) in zip(self.columns, self.declared, strict=True):
            column.overflow, column.no_wrap = overflow, no_wrap
        dividers = (len(self.columns) - 1 + 2 * self.show_edge) if self.box else 0
        pads = len(self.columns) * (self.padding[1] + self.padding[3])
        fit_columns(self.columns, options.max_width - dividers - pads)
        yield from super().__rich_console__(console, options)


def _natural(column: Column, unit: str = "\n") -> int:
    """The widest line (or, with unit=None, word) of a column's header and cells."""
    widest = 0
    for cell in (column.header, *column.cells):
        text = cell.plain if isinstance(cell, Text) else str(cell)
        widest = max(widest, *(cell_len(part) for part in text.split(unit)))
    return widest


def fit_columns(columns: list[Column], room: int) -> None:
    """Fixed widths whose sum is at most `room` (the console's width less the table's
    padding and dividers), where it can be: identity columns whole while each text column
    gets at least VALUE_MIN; else they give up room by STEPS; the text columns then share
    what is left in proportion to what they would need."""
    natural = [_natural(c) for c in columns]
    text = [i for i, c in enumerate(columns) if not c.no_wrap]
    fixed = [i for i in range(len(columns)) if i not in text]
    floor = {i: min(natural[i], VALUE_MIN) for i in text}
    widths = list(natural)
    for name, overflow, least in STEPS:
        over = sum(widths[i] for i in fixed) + sum(floor.values()) - room
        found = [i for i in fixed if columns[i].header == name]
        if over <= 0:
            break
        if found:
            _give(columns[found[0]], widths, found[0], over, overflow, least)
    over = sum(widths[i] for i in fixed) + sum(floor.values()) - room
    for i in text:  # a narrow terminal: the text columns narrow too, down to VALUE_LEAST
        cut = max(0, min(over, floor[i] - min(natural[i], VALUE_LEAST)))
        floor[i], over = floor[i] - cut, over - cut
    left = room - sum(widths[i] for i in fixed)
    wanted = sum(natural[i] - floor[i] for i in text)
    spare = max(0, left - sum(floor.values()))
    for i in text:
        need = natural[i] - floor[i]
        widths[i] = floor[i] + (need * spare // wanted if wanted > spare else need)
    for column, w in zip(columns, widths, strict=True):
        column.width = max(1, w)


def _give(
    column: Column, widths: list[int], i: int, over: int, overflow: str, least: int | None
) -> None:
    """One of STEPS: column `i` narrows by up to `over`, no narrower than `least`."""
    narrowest = _natural(column, None) if least is None else least  # type: ignore[arg-type]
    if widths[i] > narrowest:  # a time folds after its date or not at all
        cut = widths[i] - narrowest if column.header in TIMES else min(over, widths[i] - narrowest)
        widths[i] -= cut
        column.overflow = overflow  # type: ignore[assignment]
        column.no_wrap = overflow == "ellipsis"


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
    """A compact table; the `whole` columns keep each cell on one line while it fits."""
    return _table(title, *columns, whole=whole)


def _table(title: str | None, *columns: str, whole: Sequence[str] = ()) -> Table:
    """A compact table (one space between columns) fitted to the console (`FittedTable`):
    the WHOLE (identity) columns and those named in `whole` keep their cells on one line
    unless a value would be left too narrow; the others fold long cells."""
    table = FittedTable(
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
    facts: Iterable[Fact],
    title: str | None = None,
    *,
    fresh: frozenset[int] = frozenset(),
    limit: int | None = VALUE_CHARS,
) -> Table:
    """Facts of one tenant; closed ones dimmed, `fresh` fact ids (just written) bold;
    values cut after `limit` characters (None: whole)."""
    facts = list(facts)
    times = readable(t for f in facts for t in (f.valid_from, f.valid_to))
    columns = ("fact", "key", "value", "valid from", "valid to", "source")
    table = _table(title, *columns)
    for fact in facts:
        table.add_row(
            lineage(fact),
            key_of(fact),
            shown(fact.value) if limit is None else listed(fact.value, limit),
            times[fact.valid_from],
            times[fact.valid_to],
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
    columns = ("fact", "value", "valid from", "valid to", "source", "said")
    table = _table(title, *(("key", *columns) if keyed else columns))
    times = readable(t for f in facts for t in (f.valid_from, f.valid_to))
    for fact in facts:
        table.add_row(
            *((key_of(fact),) if keyed else ()),
            lineage(fact),
            listed(fact.value),
            times[fact.valid_from],
            times[fact.valid_to],
            fact.source_episode_id,
            listed(said.get(fact.fact_id, "")),
            style="" if fact.valid_to is None else "dim",
        )
    return Group(table, Text("supersedes chain: " + chain(facts)))


def chain(facts: Sequence[Fact]) -> str:
    """'#3 2026-06-30 (e2) ← #1 2026-07-15 (e1)': from the newest fact back through
    `supersedes_fact_id` (facts before the chain's start, like a delayed one, stand alone)."""
    by_id = {f.fact_id: f for f in facts}
    links, fact = [], max(facts, key=lambda f: f.valid_from)
    while fact is not None:
        links.append(
            f"{ref(fact.fact_id)} {clip(shown(fact.value), 40)} ({fact.source_episode_id})"
        )
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
    labels = readable(points)
    for point in points:
        label = labels[point]
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
    said = when(turn.episode.occurred_at)
    if turn.background and spec.extracted_at:
        said += f", extracted {when(spec.extracted_at)}"
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
        lines.append(Text(line + f"valid {when(fact.valid_from)} → {when(fact.valid_to)}"))
    for s in turn.result.superseded:
        line = f"  closed {ref(s.old.fact_id)} {key_of(s.old)} = {shown(s.old.value)} "
        lines.append(Text(line + f"at {when(s.old.valid_to)}, superseded by {ref(s.new.fact_id)}"))
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
        at = when(q.at) if q.at else "now"
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
