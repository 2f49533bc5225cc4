"""The timeline picture (`sgam_store.viz.timeline_svg`): well-formed SVG with one bar per
version the store ever wrote, open bars marked, retired ones distinct, every text escaped."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator

import pytest

from sgam_store import (
    FactNotFoundError,
    InvalidTimestampError,
    MemoryFact,
    SGAMStore,
    TenantScopeError,
)
from sgam_store.viz import SVG, timeline_svg

NS = {"svg": "http://www.w3.org/2000/svg"}
HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>\x01'


def fact(value: object, valid_from: str, source: str, attribute: str = "deadline") -> MemoryFact:
    return MemoryFact(
        tenant_id="acme",
        subject="mira",
        attribute=attribute,
        value=value,
        valid_from=valid_from,
        source_episode_id=source,
    )


@pytest.fixture
def seeded(db_path: str) -> Iterator[SGAMStore]:
    """The seed's check: e1, its correction e2, and a delayed e0 (4 versions, 1 retired)."""
    with SGAMStore.from_conn_string(db_path) as store:
        store.setup()
        store.replace_fact(fact("2026-07-15", "2026-06-01T09:00:00Z", "e1"))
        store.replace_fact(fact("2026-06-30", "2026-06-03T10:00:00Z", "e2"))
        store.replace_fact(fact("2026-08-01", "2026-05-30T08:00:00Z", "e0"))
        yield store


def bars(svg: str) -> list[ET.Element]:
    return ET.fromstring(svg).findall(".//svg:g[@data-fact-id]", NS)


def test_one_bar_per_version_retired_ones_distinct(seeded: SGAMStore) -> None:
    svg = timeline_svg(seeded, "acme", "mira", "deadline")
    versions = seeded.versions("acme", "mira", "deadline")
    drawn = bars(svg)
    assert len(drawn) == len(versions) == 4
    assert [int(g.get("data-fact-id")) for g in drawn] == [v.fact_id for v in versions]
    assert [g.get("data-believed") for g in drawn] == ["false", "true", "true", "true"]
    assert "retired" in drawn[0].get("class") and "current" in drawn[1].get("class")
    for g in drawn:
        assert len(g.findall("svg:rect[@class='bar']", NS)) == 1
    assert ET.fromstring(svg).find(".//svg:g[@class='legend']", NS) is not None


def test_open_bars_are_marked_and_closed_ones_not(seeded: SGAMStore) -> None:
    drawn = bars(timeline_svg(seeded, "acme", "mira", "deadline"))
    versions = seeded.versions("acme", "mira", "deadline")
    assert [v.is_open for v in versions] == [True, False, True, False]  # e1 until corrected
    for g, version in zip(drawn, versions, strict=True):
        marked = g.find("svg:path[@class='open-arrow']", NS) is not None
        labelled = [t.text for t in g.findall("svg:text[@class='open-label']", NS)]
        assert marked == version.is_open == (g.get("data-open") == "true")
        assert labelled == (["open"] if marked else [])


def test_the_bars_sit_where_their_times_say(seeded: SGAMStore) -> None:
    """Valid time across: e0 lies left of e1, which lies left of e2; belief time up: the
    corrected e1 band starts above the retired one."""
    drawn = bars(timeline_svg(seeded, "acme", "mira", "deadline"))
    rect = [g.find("svg:rect[@class='bar']", NS) for g in drawn]
    x = [float(r.get("x")) for r in rect]
    bottom = [float(r.get("y")) + float(r.get("height")) for r in rect]
    retired, e1, e2, e0 = range(4)
    assert x[e0] < x[e1] == x[retired] < x[e2]
    assert bottom[retired] > bottom[e1] == bottom[e2] > bottom[e0]  # SVG y grows down


def test_every_text_is_escaped(db_path: str) -> None:
    with SGAMStore.from_conn_string(db_path) as store:
        store.replace_fact(fact(HOSTILE, "2026-06-01T09:00:00Z", "e1", attribute="x"))
        store.replace_fact(fact({"html": HOSTILE}, "2026-06-02T09:00:00Z", "e2", attribute="x"))
        svg = timeline_svg(store, "acme", "mira", "x", width=1600)
    root = ET.fromstring(svg)  # well-formed, though the value holds a control character
    assert root.findall(".//svg:script", NS) == [] and root.findall(".//svg:img", NS) == []
    assert "<script>" not in svg and "<img" not in svg
    texts = " ".join(t.text or "" for t in root.iter(f"{{{NS['svg']}}}text"))
    assert "<script>alert(1)</script>" in texts  # shown as text, not markup


def test_marks_for_valid_at_and_known_at(seeded: SGAMStore) -> None:
    first = seeded.versions("acme", "mira", "deadline")[0]
    svg = timeline_svg(
        seeded,
        "acme",
        "mira",
        "deadline",
        valid_at="2026-06-02T00:00:00Z",
        known_at=first.known_from,
    )
    root = ET.fromstring(svg)
    assert "2026-06-02" in "".join(root.find(".//svg:g[@class='valid-at']", NS).itertext())
    assert root.find(".//svg:g[@class='known-at']", NS) is not None
    plain = ET.fromstring(timeline_svg(seeded, "acme", "mira", "deadline"))
    assert plain.find(".//svg:g[@class='valid-at']", NS) is None
    with pytest.raises(InvalidTimestampError):
        timeline_svg(seeded, "acme", "mira", "deadline", valid_at="2026-06-02T00:00:00")


def test_notebooks_display_it_and_bad_calls_are_refused(seeded: SGAMStore) -> None:
    svg = timeline_svg(seeded, "acme", "mira", "deadline", width=500, height=240)
    assert isinstance(svg, SVG) and isinstance(svg, str)
    assert svg._repr_svg_() == svg
    assert ET.fromstring(svg).get("width") == "500"
    with pytest.raises(FactNotFoundError):
        timeline_svg(seeded, "acme", "mira", "no_such_key")
    with pytest.raises(ValueError, match="at least"):
        timeline_svg(seeded, "acme", "mira", "deadline", width=10)
    with pytest.raises(TenantScopeError):
        timeline_svg(seeded.for_tenant("globex"), "acme", "mira", "deadline")
    assert len(bars(timeline_svg(seeded.for_tenant("acme"), "acme", "mira", "deadline"))) == 4


def test_import_sgam_store_does_not_load_viz() -> None:
    code = "import sys, sgam_store; print('sgam_store.viz' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
