"""The inspector's pages as small classes over the library's public API (Datasette's
layout): each builds one dict, which the app renders as HTML or returns as JSON.

A page reads only what it shows: listings page the store's own listing or an index by
keyset (namespaces never read values; keys read one page of values); a figure per row
comes from an index, capped (`count_keys`, a tenant's subject names); how long a list is
and how much the store holds are counted only when asked (`count=1`), up to a cap. Every
read goes through a `for_tenant` view or names the tenant the app allows, so a confined
app cannot show another tenant.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import attrgetter
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, TypeVar

from markupsafe import Markup

from sgam_store import Episode, ExternalSource, Fact, SupersessionDecision
from sgam_store.core import clock
from sgam_store.managers.supersession import (
    Queued,
    memory_text,
    pending_reviews,
    recent_decisions,
    review_queue,
)
from sgam_store.ui.params import (
    MAX_PAGE,
    MAX_PER_PAGE,
    BadParameter,
    Paging,
    When,
    cursor,
    instant,
    number,
    text,
)
from sgam_store.viz import timeline_svg, value_text

if TYPE_CHECKING:
    from sgam_store import Change
    from sgam_store.store import SGAMStore

SCAN_PAGES = 10  # a filtered key listing reads at most this many pages of values
COUNT_CAP = 200  # a list of names is counted this far (a page reads its names by seeks)
SUBJECTS_CAP = 20  # each tenant's subjects, on the tenants page, are counted this far
TOTALS_CAP = 10_000  # the store's current facts and episodes are counted this far
EPOCH = "1970-01-01T00:00:00Z"  # the change feed's default start: everything
QUEUE_SHOWN = 20  # queued memories the review page shows unless ?limit= says otherwise
DECISIONS = 50  # decisions a review page shows unless ?per_page= says otherwise
DECISIONS_LOOKUP = 10_000  # an undo finds its decision among this many of the latest


T = TypeVar("T")


class NotFound(LookupError):
    """Nothing to show at this address (or it belongs to a tenant the app hides)."""


@dataclass(frozen=True)
class Inspector:
    """What every page reads through: the store, the one tenant a confined app shows,
    and whether writes (undo) are enabled."""

    store: SGAMStore
    tenant: str | None = None
    allow_writes: bool = False

    def tenant_of(self, query: Mapping[str, str]) -> str:
        """The page's tenant; another than the confined one does not exist here."""
        tenant = text(query, "tenant", required=True)
        if self.tenant is not None and tenant != self.tenant:
            raise NotFound(f"no tenant {tenant!r}")
        try:
            return self.store.layout.check_tenant(tenant)
        except ValueError as exc:
            raise BadParameter(f"tenant: {exc}") from None

    def view(self, tenant: str, when: When) -> Any:
        """The tenant's BaseStore view, answering at `when`."""
        view = self.store.for_tenant(tenant)
        if when.now:
            return view
        return view.as_of(when.valid_at or datetime.now(UTC), when.known_at)

    def subject_of(self, tenant: str, relative: Sequence[str]) -> str:
        """The subject a tenant view's namespace stands for."""
        layout = self.store.layout
        return layout.split(layout.absolute(tenant, relative))[1]

    def relative_of(self, tenant: str, subject: str) -> tuple[str, ...]:
        """A subject's namespace as the tenant's view names it; "" is the whole tenant."""
        if not subject:
            return ()
        layout = self.store.layout
        return layout.relative(layout.fact_namespace(tenant, subject))

    def current_keys(self, tenant: str, subjects: list[str], when: When) -> dict[str, int | str]:
        """How many keys each subject holds now, each counted up to COUNT_CAP (from an
        index, no values read: a bounded read per subject, "200+" beyond); nothing at
        another instant, whose listing a current total would not match."""
        if not when.now or not subjects:
            return {}
        counted = self.store.for_tenant(tenant).count_keys(tenant, subjects, cap=COUNT_CAP)
        return {subject: capped(n, COUNT_CAP) for subject, n in counted.items()}

    def tenant_totals(self, tenant: str) -> dict[str, int | str | None]:
        """A confined app's counts, its tenant's alone, each counted up to TOTALS_CAP
        (`capped_totals` of the tenant, through indexes led by tenant_id): store-wide
        figures would tell it about the others, and a listing of all the tenant's
        subjects would grow with them."""
        counted = self.store.capped_totals(TOTALS_CAP, tenant_id=tenant)
        return {
            "tenants": 1,
            "current_facts": capped(counted["facts"], TOTALS_CAP),
            "episodes": capped(counted["episodes"], TOTALS_CAP),
        }

    def instant(self, when: When) -> dict[str, str | None]:
        """`tenant_names`/`subject_names` arguments for `when`: none for now; else valid
        time (default now, as `view` takes it) and belief time."""
        if when.now:
            return {}
        return {"at": when.valid_at or clock.utc_now(), "known_at": when.known_at}


def shown(value: Any) -> str:
    """A value as a person reads it (`viz.value_text`: LangMem's `{"content": ...}` as
    its content, strings as they are, anything else as JSON), as the picture shows it."""
    return value_text(value)


def stamp(at: datetime) -> str:
    """A UTC time at full precision, for the JSON twins (pydantic's form: a Z suffix);
    HTML shows it through `times`."""
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def times(rows: Iterable[Mapping[str, Any]], *fields: str) -> dict[str, Markup]:
    """For a template: each time one listing shows (`fields` of its rows, full-precision
    text) as a person reads it, to the second, with microseconds only where two distinct
    instants of the listing would otherwise read the same (`clock.readable`). A narrow
    column may break it after the date, nowhere else (`<wbr>`: a date's hyphens before
    digits are no break)."""
    found = sorted({row[f] for row in rows for f in fields if row.get(f)})
    return {
        raw: Markup("T<wbr>").join(str(text).split("T", 1))
        for raw, text in zip(found, clock.readable(found), strict=True)
    }


def moment(value: str | None) -> str:
    """For a template: one time (a parameter, a header) to the second; '' for none."""
    return clock.readable_one(value) or "" if value else ""


TEMPLATE_GLOBALS = {"times": times, "moment": moment, "shown": shown}


def fact_json(fact: Fact | Change) -> dict[str, Any]:
    """A fact's JSON form; its value as stored, which pydantic's dump refuses past 255
    levels of nesting (the app's JSON writer takes any depth)."""
    dumped = fact.model_dump(mode="json", exclude={"value"})
    fields = type(fact).model_fields
    return {name: fact.value if name == "value" else dumped[name] for name in fields}


class Page:
    """A page: `data()` is its JSON form and its template's context."""

    template: ClassVar[str]
    title: ClassVar[str]

    def __init__(self, app: Inspector, query: Mapping[str, str]) -> None:
        self.app = app
        self.query = query
        self.when = When.of(query)

    def data(self) -> dict[str, Any]:
        raise NotImplementedError


class TenantsPage(Page):
    """The tenants, a page at a time from the last one the page before showed (`after`):
    the names read by index seeks (one per name, `tenant_names`, now or at the page's
    instant), each tenant's subjects counted up to SUBJECTS_CAP the same way. How many
    tenants, facts and episodes there are is counted on request (`count=1`), since each
    count grows with the store up to its cap."""

    template = "tenants.html"
    title = "Tenants"

    def data(self) -> dict[str, Any]:
        store, when = self.app.store, self.app.instant(self.when)
        if self.app.tenant is None:

            def fetch(after: str | None, limit: int) -> list[str]:
                return store.tenant_names(after=after or "", limit=limit, **when)
        else:  # confined: its one tenant, whatever the instant
            confined = self.app.tenant

            def fetch(after: str | None, limit: int) -> list[str]:
                return [confined] if after is None or confined > after else []

        listing = NameList.of(self.query, fetch)
        return {
            **listing.data(),
            "rows": [{"tenant": t, "subjects": self._subjects(t)} for t in listing.rows],
            "totals": self._totals(listing.total) if listing.counted else None,
        }

    def _totals(self, tenants: int | str | None) -> dict[str, int | str | None]:
        """The store's counts, each up to TOTALS_CAP; a confined app's are its tenant's
        alone (`Inspector.tenant_totals`): store-wide figures would tell it about the others."""
        if self.app.tenant is not None:
            return self.app.tenant_totals(self.app.tenant)
        counted = self.app.store.capped_totals(TOTALS_CAP)
        return {
            "tenants": tenants,
            "current_facts": capped(counted["facts"], TOTALS_CAP),
            "episodes": capped(counted["episodes"], TOTALS_CAP),
        }

    def _subjects(self, tenant: str) -> int | str:
        when = self.app.instant(self.when)
        found = self.app.store.subject_names(tenant, limit=SUBJECTS_CAP + 1, **when)
        return capped(len(found), SUBJECTS_CAP)


class SubjectsPage(Page):
    """A tenant's subjects, a page at a time from the last one the page before showed
    (`after`), read by index seeks (`subject_names`, now or at the page's instant), each
    with its current keys counted up to COUNT_CAP; the subjects themselves are counted
    on request (`count=1`)."""

    template = "subjects.html"
    title = "Subjects"

    def data(self) -> dict[str, Any]:
        tenant = self.app.tenant_of(self.query)
        store, when = self.app.store, self.app.instant(self.when)

        def fetch(after: str | None, limit: int) -> list[str]:
            return store.subject_names(tenant, after=after, limit=limit, **when)

        listing = NameList.of(self.query, fetch)
        return {
            "tenant": tenant,
            **listing.data(),
            "keys": self.app.current_keys(tenant, listing.rows, self.when),
        }


def capped(count: int, cap: int) -> int | str:
    """A count read up to `cap` (`cap` + 1 means more): the number, or "cap+"."""
    return f"{cap:,}+" if count > cap else count


NameFetch = Callable[[str | None, int], list[str]]  # (after; None: from the first, limit)


@dataclass(frozen=True)
class NameList:
    """One page of a list of names (tenants, a tenant's subjects), paged by keyset: the
    page starts after the last name the page before showed, so page 40 costs what page
    2 does (a seek a name, plus one to know a next page exists).

    How many names the list holds costs a seek a name, so it is counted only when asked
    (`count=1`: up to COUNT_CAP), as Django's admin offers "Show all" rather than count
    every list; a list that ends on its first page says its length, which it read anyway."""

    rows: list[str]
    after: str | None  # where this page starts: after this name (None: the first page)
    next: dict[str, str] | None  # the next page's cursor; None: this is the last
    paging: Paging
    needle: str
    scanned: int | None  # names read to fill a filtered page
    counted: bool
    total: int | str | None

    @classmethod
    def of(cls, query: Mapping[str, str], fetch: NameFetch) -> NameList:
        paging, needle = Paging.of(query), text(query, "filter")
        after = cursor(query, "after")
        counted = bool(number(query, "count", 0, 0, 1))
        rows, last, read = keyset_page(fetch, after, paging.per_page, needle, str)
        scanned = read if needle else None
        total: int | str | None = None
        if counted:
            total = count_names(fetch, needle)
        elif after is None and last is None:
            total = len(rows)  # the whole list is on this page
        nxt = None if last is None else {"after": last}
        return cls(rows, after, nxt, paging, needle, scanned, counted, total)

    def data(self) -> dict[str, Any]:
        """The page's JSON fields (and its template's)."""
        return {
            "rows": self.rows,
            "total": self.total,
            "counted": self.counted,
            "has_next": self.next is not None,
            "next": self.next,
            "filter": self.needle,
            "scanned": self.scanned,
            "paging": vars(self.paging),
            "after": self.after,
        }


def keyset_page(
    fetch: Callable[[str | None, int], list[T]],
    after: str | None,
    per_page: int,
    needle: str,
    key: Callable[[T], str],
) -> tuple[list[T], str | None, int]:
    """A page of a list read in `key` order after `after` (None: from the first) by
    `fetch(after, limit)`: its rows (those whose key holds `needle`, case-insensitive),
    the next page's cursor (None: the last) and how many rows were read. Unfiltered,
    one read of a page and one more; filtered, at most SCAN_PAGES batches of
    MAX_PER_PAGE, after which the next page goes on from the last row read."""
    size, batches = (MAX_PER_PAGE, SCAN_PAGES) if needle else (per_page + 1, 1)
    rows: list[T] = []
    read, last = 0, after
    for _ in range(batches):
        batch = fetch(last, size)
        for item in batch:
            read += 1
            if needle.lower() in key(item).lower():
                if len(rows) == per_page:
                    return rows, key(rows[-1]), read
                rows.append(item)
        if len(batch) < size:
            return rows, None, read
        last = key(batch[-1])
    return rows, last, read


def count_names(fetch: NameFetch, needle: str) -> int | str:
    """How many names the list holds, up to COUNT_CAP ("200+"); with a filter, how many
    of its first SCAN_PAGES * MAX_PER_PAGE names match ("N+" when more follow)."""
    if not needle:
        return capped(len(fetch(None, COUNT_CAP + 1)), COUNT_CAP)
    scan = SCAN_PAGES * MAX_PER_PAGE
    names = fetch(None, scan + 1)
    matched = sum(needle.lower() in n.lower() for n in names[:scan])
    return f"{matched:,}+" if len(names) > scan else matched


class KeysPage(Page):
    """A subject's keys and current values, a page at a time (plus one, to know a next
    page exists); a filter scans a bounded number of pages. Now, a subject's own keys
    are read in key order from an index (`subject_facts`) and page by keyset: the next
    page starts after the last key shown (`after`), a seek, so a deep page of a
    19,000-key user reads its own rows. The whole tenant (subject ""), or another
    instant, pages the store's own listing, newest first, by offset (`page`)."""

    template = "keys.html"
    title = "Keys"

    def data(self) -> dict[str, Any]:
        tenant = self.app.tenant_of(self.query)
        subject = text(self.query, "subject")
        paging = Paging.of(self.query)
        needle = text(self.query, "filter")
        keyset = bool(subject) and self.when.now
        after = cursor(self.query, "after") if keyset else None
        if keyset:
            rows, nxt, scanned = self._by_key(tenant, subject, after, paging, needle)
            has_next = nxt is not None
        else:
            rows, has_next, scanned = self._by_listing(tenant, subject, paging, needle)
            nxt = None
        return {
            "tenant": tenant,
            "subject": subject,
            "filter": needle,
            "paging": vars(paging),
            "keyset": keyset,
            "after": after,
            "has_next": has_next,
            "next": nxt,
            "scanned": scanned,
            # The subject's own keys; "" lists the whole tenant, which one count cannot say.
            "total": self.app.current_keys(tenant, [subject], self.when).get(subject)
            if subject
            else None,
            "rows": [
                {
                    "subject": row.subject,
                    "key": row.key,
                    "value": shown(row.value),
                    "valid_from": stamp(row.valid_from),
                }
                for row in rows
            ],
        }

    def _by_key(
        self, tenant: str, subject: str, after: str | None, paging: Paging, needle: str
    ) -> tuple[list[Row], dict[str, str] | None, int]:
        """A subject's keys now, after key `after`, by keyset (`subject_facts`): the
        page's rows, the next page's cursor (None: the last), and how many were read."""
        store = self.app.store

        def seek(start: str | None, limit: int) -> list[Row]:
            found = store.subject_facts(tenant, subject, limit=limit, after=start)
            return [Row(f.subject, f.attribute, f.value, f.valid_from) for f in found]

        by_key = attrgetter("key")
        rows, last, read = keyset_page(seek, after, paging.per_page, needle, by_key)
        return rows, None if last is None else {"after": last}, read

    def _by_listing(
        self, tenant: str, subject: str, paging: Paging, needle: str
    ) -> tuple[list[Row], bool, int]:
        """The whole tenant's keys, or a subject's at another instant, from the view's
        listing (newest first) by offset."""
        view = self.app.view(tenant, self.when)
        prefix = self.app.relative_of(tenant, subject)

        def fetch(limit: int, offset: int) -> list[Row]:
            found = view.search(prefix, limit=limit, offset=offset, refresh_ttl=False)
            return [
                Row(self.app.subject_of(tenant, i.namespace), i.key, i.value, i.updated_at)
                for i in found
            ]

        return self._page(fetch, paging, needle)

    @staticmethod
    def _page(
        fetch: Callable[[int, int], list[Row]], paging: Paging, needle: str
    ) -> tuple[list[Row], bool, int]:
        """By offset: the page's rows, whether more follow, and how many rows were read."""
        if not needle:
            found = fetch(paging.per_page + 1, paging.offset)
            return found[: paging.per_page], len(found) > paging.per_page, len(found)
        wanted = paging.offset + paging.per_page + 1
        matched: list[Row] = []
        offset = scanned = 0
        for _ in range(SCAN_PAGES):
            batch = fetch(MAX_PER_PAGE, offset)
            scanned += len(batch)
            matched += [row for row in batch if needle.lower() in row.key.lower()]
            offset += len(batch)
            if len(matched) >= wanted or len(batch) < MAX_PER_PAGE:
                break
        rows = matched[paging.offset : paging.offset + paging.per_page]
        return rows, len(matched) >= wanted, scanned


class Row(NamedTuple):
    """One line of the keys page, from a fact or from a listed item."""

    subject: str
    key: str
    value: Any
    valid_from: datetime


class KeyPage(Page):
    """One key, a page of its versions at a time in write order: the rows its picture
    draws (retired ones included), each with when its fact was first believed, who said
    it, and the memories it replaced or was replaced by (a correction written under
    another key included). A page reads its own rows (and the one before, where a row's
    predecessor usually is), the key's decisions in one statement and one source per
    episode, whatever the key's length: a key rewritten 500 times is not read whole."""

    template = "key.html"
    title = "Key"

    def data(self) -> dict[str, Any]:
        tenant = self.app.tenant_of(self.query)
        subject = text(self.query, "subject")
        attribute = text(self.query, "attribute", required=True)
        paging = Paging.of(self.query)
        store, when = self.app.store, self.when
        view, key = store.for_tenant(tenant), (tenant, subject, attribute)
        before = min(paging.offset, 1)  # the row before the page: context, not shown
        try:
            read = view.versions(
                *key, limit=paging.per_page + before + 1, offset=paging.offset - before
            )
            shown_fact = store.fact_at(
                tenant, subject, attribute, at=when.valid_at, known_at=when.known_at
            )
            decided = store.key_decisions(tenant, subject, attribute)
        except ValueError as exc:
            raise BadParameter(str(exc)) from None
        versions = read[before : before + paging.per_page]
        known_at = None if when.known_at is None else clock.to_utc(when.known_at)
        missing = f"no key {attribute!r} for subject {subject!r}"
        if not versions:
            raise NotFound(missing if paging.page == 1 else f"no page {paging.page} of versions")
        if known_at is not None:  # the key's first version, believed from its earliest instant
            first = read[0] if not paging.offset else view.versions(*key, limit=1)[0]
            if first.known_from > known_at:
                raise NotFound(missing)
        known = {f.fact_id: f for f in read}
        said = store.sources(tenant, [v.source_episode_id for v in versions])
        links = Links(store, tenant, subject, attribute, known, by_fact(decided), said)
        last = {v.fact_id: i for i, v in enumerate(versions)}  # a fact's latest row here
        return {
            "tenant": tenant,
            "subject": subject,
            "attribute": attribute,
            "value": None if shown_fact is None else shown(shown_fact.value),
            "value_fact_id": None if shown_fact is None else shown_fact.fact_id,
            "paging": vars(paging),
            "has_next": len(read) > before + paging.per_page,
            "versions": [
                version_json(v, links, known_at, decisions=last[v.fact_id] == i)
                for i, v in enumerate(versions)
            ],
            "picture": timeline_svg(
                Drawn(versions),
                tenant,
                subject,
                attribute,
                valid_at=when.valid_at,
                known_at=when.known_at,
            ),
        }


@dataclass(frozen=True)
class Drawn:
    """The versions the page read, handed to the picture (`viz.Versioned`), so the
    picture draws exactly the table's rows and the key is read once."""

    rows: list[Fact]

    def versions(self, tenant_id: str, subject: str, attribute: str) -> list[Fact]:
        return self.rows


def version_json(
    v: Fact, links: Links, known_at: datetime | None, *, decisions: bool
) -> dict[str, Any]:
    """One row of the key's table: the version as stored, whether it was believed at
    the page's instant, its source, the fact it replaced, and (on a fact's latest row
    only, so a fact's decisions show once) the review decisions naming it."""
    believed = (known_at is None or v.known_from <= known_at) and (
        v.known_to is None or (known_at is not None and known_at < v.known_to)
    )
    return {
        **fact_json(v),
        "shown_value": shown(v.value),
        "believed": believed,
        "source": links.source(v),
        "replaced": None
        if v.supersedes_fact_id is None
        else {"fact_id": v.supersedes_fact_id, **(links.replaced(v.supersedes_fact_id) or {})},
        "decisions": links.decisions(v) if decisions else [],
    }


@dataclass
class Links:
    """What a key page's rows point at: who said each (the page's sources, read in one
    statement), the key's decisions (read in one statement) by fact, and the keys of the
    facts a row names: from the rows the page read, else from the decision that named
    the fact (the change feed at the instant it was recorded: the other memory was
    revised or closed), else from the key's history, read at most once (a predecessor on
    another page, or another key's memory that a correction replaced)."""

    store: SGAMStore
    tenant: str
    subject: str
    attribute: str
    known: dict[int, Fact]
    decided: dict[int, list[SupersessionDecision]]  # by the fact ids each one names
    said: Mapping[str, Episode | ExternalSource]  # by source id; a missing one is absent
    history_read: bool = False

    def source(self, fact: Fact) -> dict[str, Any]:
        return source_json(self.said.get(fact.source_episode_id))

    def replaced(self, fact_id: int) -> dict[str, str] | None:
        """The subject and key of the fact a row replaced."""
        if fact_id not in self.known:
            named = [d for d in self.decided.get(fact_id, []) if d.old_fact_id == fact_id]
            found = named and self.key_of(fact_id, named[0].decided_at)
            if found:
                return found
            self._read_history()
        return self.key_of(fact_id)

    def _read_history(self) -> None:
        if not self.history_read:
            self.history_read = True
            history = self.store.history(self.tenant, self.subject, self.attribute)
            self.known = {f.fact_id: f for f in history} | self.known

    def key_of(self, fact_id: int, at: str | None = None) -> dict[str, str] | None:
        """The subject and key of a fact, from what the page knows, else from the changes
        written at `at` (a decision's instant: the other memory was revised or closed)."""
        if fact_id in self.known:
            fact = self.known[fact_id]
            return {"subject": fact.subject, "attribute": fact.attribute}
        if at is None:
            return None
        end = clock.to_utc(at) + clock.MICROSECOND
        for change in self.store.for_tenant(self.tenant).changes(at, until=end, limit=50):
            if change.fact_id == fact_id:
                return {"subject": change.subject, "attribute": change.attribute}
        return None

    def decisions(self, fact: Fact) -> list[dict[str, Any]]:
        """The decisions naming the fact, each from its side: "supersedes" the other
        memory when the fact is the new one, "superseded by" it when the old one."""
        out = []
        for d in self.decided.get(fact.fact_id, []):
            newer = d.new_fact_id == fact.fact_id
            other = d.old_fact_id if newer else d.new_fact_id
            out.append(
                {
                    **vars(d),
                    "side": "new" if newer else "old",
                    "other": {"fact_id": other, **(self.key_of(other, d.decided_at) or {})},
                }
            )
        return out


def by_fact(decisions: list[SupersessionDecision]) -> dict[int, list[SupersessionDecision]]:
    """Each fact's decisions, in their order: those naming it as the new memory or the old."""
    found: dict[int, list[SupersessionDecision]] = {}
    for d in decisions:
        for fact_id in dict.fromkeys((d.new_fact_id, d.old_fact_id)):
            found.setdefault(fact_id, []).append(d)
    return found


def source_json(said: Episode | ExternalSource | None) -> dict[str, Any]:
    """Who said it: the episode's text, speaker and thread, or the external marker; an
    id naming no recorded episode (never recorded, or erased: None) is shown as missing."""
    if said is None:
        return {"episode_id": None, "text": None, "kind": "missing"}
    if isinstance(said, Episode):
        return {
            "episode_id": said.episode_id,
            "text": said.content,
            "speaker": said.speaker,
            "thread_id": said.thread_id,
            "kind": said.source_kind,
        }
    return {
        "episode_id": None,
        "text": None,
        "speaker": None,
        "thread_id": None,
        "kind": said.kind,
        "ref": said.ref,
    }


class SearchPage(Page):
    """The tenant's search, ranked exactly as `search` ranks it (`explain_search` on the
    same view), with each hit's score, its keyword and vector contributions, whether it
    is in the window of a time or event the query names, and whether it is the key's
    current version."""

    template = "search.html"
    title = "Search"

    def data(self) -> dict[str, Any]:
        tenant = self.app.tenant_of(self.query)
        q = text(self.query, "q")
        prefix = text(self.query, "prefix")
        limit = number(self.query, "limit", 10, 1, MAX_PER_PAGE)
        hits = []
        if q:
            view = self.app.view(tenant, self.when)
            relative = self.app.relative_of(tenant, prefix)
            found = view.explain_search(relative, q, limit=limit)
            hits = score_sources([self._hit(tenant, e) for e in found])
        scale = "cosine" if any(h["cosine"] is not None for h in hits) else "keyword"
        return {
            "tenant": tenant,
            "q": q,
            "prefix": prefix,
            "limit": limit,
            "scale": scale,
            "hits": hits,
        }

    def _hit(self, tenant: str, explained: Any) -> dict[str, Any]:
        item = explained.item
        subject = self.app.subject_of(tenant, item.namespace)
        return {
            "subject": subject,
            "key": item.key,
            "value": shown(item.value),
            "score": item.score,
            "keyword": explained.keyword,
            "keyword_rank": explained.keyword_rank,
            "cosine": explained.cosine,
            "vector_rank": explained.vector_rank,
            "in_window": explained.in_window,
            "anchor": explained.anchor,
            "valid_from": stamp(item.updated_at),
            "current": self._current(tenant, subject, item),
        }

    def _current(self, tenant: str, subject: str, item: Any) -> bool:
        """Whether the hit is its key's current version: a search now sees current
        versions only, so only a hit found at another instant is looked up (one read)."""
        if self.when.now:
            return True
        current = self.app.store.fact_at(tenant, subject, item.key)
        return current is not None and current.valid_from == item.updated_at


def score_sources(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Say where each hit's score comes from, since it need not be the hit's own signal.

    A score never rises down the list (so a threshold keeps a prefix of the ranking).
    In keyword search it is the lowest share of the query's terms held by the hit or any
    hit above it (`read.scoring.calibrated`): BM25 may rank first a short memory holding
    one rare term of the query ("city 7" for "preference number 7", whose other words
    are in half the tenant's memories), and every hit below then scores that share,
    the exact match included. With vectors it is the highest cosine of the hit or any
    below it (`ranking.similarity_scores`). `score_from` is the 1-based rank of the hit
    whose own signal set the score, None where the hit's own did."""
    scale = "cosine" if any(h["cosine"] is not None for h in hits) else "keyword"
    own = [h[scale] for h in hits]
    for i, hit in enumerate(hits):
        hit["score_from"] = None
        if hit["score"] is None or (own[i] is not None and abs(own[i] - hit["score"]) < 5e-5):
            continue
        setters = [j for j, o in enumerate(own) if o is not None and abs(o - hit["score"]) < 5e-5]
        if setters:
            hit["score_from"] = min(setters, key=lambda j: abs(j - i)) + 1
    return hits


class ReviewPage(Page):
    """The supersession queue with the candidates a review would show, and the past
    decisions with their evidence and reason (undo is a POST, with writes enabled). Each
    list pages by keyset: the queue oldest first from the last fact id a page showed
    (`queue_after`), the decisions newest first from the last decision id
    (`decisions_before`), so a page deep in either reads its rows, never those before.
    `limit` is the queue's page size, `per_page` the decisions'.

    Read-only, a memory of a large namespace lists no candidates but the search a review
    runs for them (`search`: its query and prefix), so the page costs index lookups per
    memory shown; with writes enabled, where a person decides, the search runs."""

    template = "review.html"
    title = "Corrections under review"

    def data(self) -> dict[str, Any]:
        tenant = self.app.tenant_of(self.query)
        limit = number(self.query, "limit", QUEUE_SHOWN, 1, MAX_PER_PAGE)
        after = number(self.query, "queue_after", 0, 0, 2**62)
        before = number(self.query, "decisions_before", 0, 0, 2**62) or None
        shown = number(self.query, "per_page", DECISIONS, 1, MAX_PER_PAGE)
        waiting, cut = self._waiting(tenant, limit, after)
        decisions = tenant_decisions(self.app.store, tenant, shown + 1, before)
        more = len(decisions) > shown
        decisions = decisions[:shown]
        return {
            "tenant": tenant,
            "limit": limit,
            "queue": [self._queued(tenant, q) for q in waiting],
            "queue_after": after,
            "queue_page": number(self.query, "queue_page", 1, 1, MAX_PAGE),
            "queue_next": cut,
            "decisions": decisions,
            "per_page": shown,
            "decisions_before": before,
            "decisions_page": number(self.query, "decisions_page", 1, 1, MAX_PAGE),
            "decisions_next": decisions[-1]["decision_id"] if more else None,
        }

    def _waiting(self, tenant: str, limit: int, after: int) -> tuple[list[Queued], int | None]:
        """The queue's page after fact `after`: the memories waiting among the next
        `limit` queued (one more is read, to know whether another page follows), and the
        fact id the next page starts after (None: this is the last)."""
        store = self.app.store
        if self.app.allow_writes:
            reviews, idle = pending_reviews(store, tenant, limit=limit + 1, after=after)
            waiting = [Queued(r.new, r.candidates) for r in reviews]
        else:
            waiting, idle = review_queue(store, tenant, limit=limit + 1, after=after)
        read = sorted([q.new.fact_id for q in waiting] + [d.fact_id for d in idle])
        if len(read) <= limit:
            return waiting, None
        cut = read[limit - 1]
        return [q for q in waiting if q.new.fact_id <= cut], cut

    def _queued(self, tenant: str, queued: Queued) -> dict[str, Any]:
        new = queued.new
        search = None
        if queued.candidates is None:
            search = {"q": memory_text(new.value), "prefix": new.subject}
        return {
            "new": {**fact_json(new), "shown_value": shown(new.value)},
            "candidates": [
                {**fact_json(c.fact), "shown_value": shown(c.fact.value), "score": c.score}
                for c in queued.candidates or []
            ],
            "search": search,
        }


def tenant_decisions(
    store: SGAMStore, tenant: str, limit: int = DECISIONS_LOOKUP, before: int | None = None
) -> list[dict[str, Any]]:
    """The tenant's latest `limit` review decisions older than decision `before` (None:
    from the newest), newest first, each with the keys of its two memories
    (`recent_decisions`: read by decision, not by fact). The review page shows
    DECISIONS a page; an undo looks its decision up among DECISIONS_LOOKUP."""
    return [
        {**vars(d.decision), "new": _key(d.new), "old": _key(d.old)}
        for d in recent_decisions(store, tenant, limit=limit, before=before)
    ]


def _key(fact: Fact | None) -> dict[str, str] | None:
    return None if fact is None else {"subject": fact.subject, "attribute": fact.attribute}


class EpisodePage(Page):
    """An episode's text and every believed fact that cites it; with writes enabled, an
    erasure preview: `purge_episode(dry_run=True)`, the purge run and rolled back, so it
    says exactly what `sgam purge --episode` would remove."""

    template = "episode.html"
    title = "Episode"

    def data(self) -> dict[str, Any]:
        tenant = self.app.tenant_of(self.query)
        episode_id = text(self.query, "id", required=True)
        store = self.app.store
        episode = store.get_episode(episode_id, tenant_id=tenant)
        if episode is None:
            raise NotFound(f"no episode {episode_id!r}")
        preview = None
        if self.app.allow_writes:
            preview = store.purge_episode(tenant, episode_id, dry_run=True).to_dict()
        erased = set(preview["fact_ids"]) if preview else set()
        cited = store.facts_citing(
            episode_id, tenant_id=tenant, known_at=self.when.known_at, limit=MAX_PER_PAGE
        )
        facts = [
            {**fact_json(f), "shown_value": shown(f.value), "erased": f.fact_id in erased}
            for f in cited
        ]
        return {
            "tenant": tenant,
            "episode": episode.model_dump(mode="json"),
            "facts": facts,
            "erasure_preview": preview,
        }


class ChangesPage(Page):
    """What changed: the tenant's change feed (`changes`), newest first, a page at a time;
    "as believed at" ends it there, unless `until` says otherwise. The next page starts
    below the last entry shown, (`before_at`, `before_row`): a keyset the feed's indexes
    seek, so a page deep in the feed reads its rows, not those of the pages before."""

    template = "changes.html"
    title = "What changed"

    def data(self) -> dict[str, Any]:
        tenant = self.app.tenant_of(self.query)
        since = instant(self.query, "since") or EPOCH
        until = instant(self.query, "until") or self.when.known_at  # what was known then
        limit = number(self.query, "limit", 100, 1, MAX_PER_PAGE)
        below = instant(self.query, "before_at")
        below_row = number(self.query, "before_row", 0, 0, 2**62) if below else 0
        view = self.app.store.for_tenant(tenant)
        found = view.changes(
            since, until=below or until, limit=limit + 1, before_row_id=below_row or None
        )
        rows = [{**fact_json(c), "shown_value": shown(c.value)} for c in found[:limit]]
        last = found[limit - 1] if len(found) > limit else None
        return {
            "tenant": tenant,
            "since": since,
            "until": until,
            "limit": limit,
            "rows": rows,
            "page_number": number(self.query, "page", 1, 1, MAX_PAGE),
            "next": None if last is None else {"before_at": last.at, "before_row": last.row_id},
        }


PAGES: dict[str, Callable[[Inspector, Mapping[str, str]], Page]] = {
    "tenants": TenantsPage,
    "subjects": SubjectsPage,
    "keys": KeysPage,
    "key": KeyPage,
    "search": SearchPage,
    "review": ReviewPage,
    "episode": EpisodePage,
    "changes": ChangesPage,
}
