"""Row security on PostgreSQL: the database keeps tenants apart even when the
application's own tenant predicates are gone.

The store runs as an application role (created by `roles.create_app_role`: neither the
tables' owner nor a superuser) through a `for_tenant` view of the attacker's tenant,
with the statement builders patched so that no statement names a tenant: every read
must still return none of the victim's rows. The same patched store on a database
without row security leaks, which proves the patches reach the statements.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from sgam_store import SGAMStore
from sgam_store.core import namespaces
from sgam_store.core.errors import ConfigurationError, TenantScopeError
from sgam_store.engines.postgres import episodes as pg_episodes
from sgam_store.engines.postgres import reads, roles
from sgam_store.ledger import changes as ledger_changes
from sgam_store.read import scope as read_scope
from sgam_store.read.query import RetrievalConfig
from tests.conftest import HashEmbeddings

VICTIM, ATTACKER = "acme", "umbrella"
SECRET = "acme-secret"  # in every row of the victim's
INDEX = {"dims": 64, "fields": ["text"]}
PAST = "2020-01-01T00:00:00Z"


def _index() -> dict[str, Any]:
    return {**INDEX, "embed": HashEmbeddings(64)}


def as_role(uri: str, role: str) -> str:
    """`uri` logging in as `role` (the embedded server trusts its socket)."""
    parts = urlsplit(uri)
    return urlunsplit(parts._replace(netloc=f"{role}@{parts.netloc.rsplit('@', 1)[-1]}"))


def seed(owner: SGAMStore) -> None:
    """Both tenants: current facts, a history, an episode each."""
    for tenant in (VICTIM, ATTACKER):
        text = SECRET if tenant == VICTIM else "umbrella note"
        ep = owner.record_episode(
            tenant, f"{text} passport said", source_kind="user_message", episode_id=f"ep-{tenant}"
        )
        owner.put((tenant, "mira"), "passport", {"text": f"{text} passport old"})
        owner.put((tenant, "mira"), "passport", {"text": f"{text} passport renewed"})
        owner.put((tenant, f"{tenant}-subject"), "visa", {"text": f"{text} visa passport"})
        assert ep.tenant_id == tenant


@pytest.fixture(scope="module")
def databases(pg_server: str) -> dict[bool, str]:
    """Two seeded databases, with and without row security, and an application role on
    each; {row_security: URI of the application role}."""
    from tests import pg

    found = {}
    for secured in (True, False):
        uri = pg.fresh_database()
        with SGAMStore.from_conn_string(uri, index=_index(), row_security=secured) as owner:
            owner.setup()
            seed(owner)
        role = "app_" + uuid.uuid4().hex[:12]
        roles.create_app_role(uri, role)
        found[secured] = as_role(uri, role)
    return found


@pytest.fixture
def app(databases: dict[bool, str], request: pytest.FixtureRequest) -> Iterator[SGAMStore]:
    with SGAMStore.from_conn_string(databases[request.param], index=_index()) as store:
        store.setup()
        yield store


@pytest.fixture
def no_tenant_predicates(monkeypatch: pytest.MonkeyPatch) -> None:
    """The application's tenant predicates removed: no statement names a tenant, and
    every namespace the application builds for a tenant names the victim's."""
    scope = reads._scope
    monkeypatch.setattr(reads, "_scope", lambda at, known_at, tenant: scope(at, known_at, None))
    monkeypatch.setattr(read_scope, "tenant_of", lambda engine, scope, op: None)
    feed = ledger_changes.feed
    monkeypatch.setattr(ledger_changes, "feed", lambda engine, t, *rest: feed(engine, None, *rest))
    by_id = pg_episodes.by_id
    monkeypatch.setattr(pg_episodes, "by_id", lambda cur, ep, tenant_id=None: by_id(cur, ep))
    layout = namespaces.Layout
    absolute, fact_namespace = layout.absolute, layout.fact_namespace
    monkeypatch.setattr(layout, "absolute", lambda self, t, ns: absolute(self, VICTIM, ns))
    monkeypatch.setattr(
        layout, "fact_namespace", lambda self, t, subject: fact_namespace(self, VICTIM, subject)
    )


def _search(mode: str) -> Callable[[SGAMStore], Any]:
    def run(store: SGAMStore) -> Any:
        store.retrieval = RetrievalConfig(mode=mode)
        return store.for_tenant(ATTACKER).search((), query="passport", limit=50)

    return run


# Each read as the attacker's view; what it returns is searched for the victim's text.
READS: dict[str, Callable[[SGAMStore], Any]] = {
    "get": lambda s: s.for_tenant(ATTACKER).get(("mira",), "passport"),
    "search keyword": _search("keyword"),
    "search vector": _search("vector"),
    "search hybrid": _search("hybrid"),
    "search filtered": lambda s: s.for_tenant(ATTACKER).search(
        (), filter={"text": f"{SECRET} visa passport"}
    ),
    "list_namespaces": lambda s: s.for_tenant(ATTACKER).list_namespaces(),
    "history": lambda s: s.history(ATTACKER, "mira", "passport"),
    "versions": lambda s: s.for_tenant(ATTACKER).versions(ATTACKER, "mira", "passport"),
    "changes": lambda s: s.for_tenant(ATTACKER).changes("2000-01-01T00:00:00Z", limit=500),
    "fact_at": lambda s: s.fact_at(ATTACKER, "mira", "passport"),
    "as_of get": lambda s: (
        s.for_tenant(ATTACKER).as_of("2100-01-01T00:00:00Z").get(("mira",), "passport")
    ),
    "as_of search": lambda s: (
        s.for_tenant(ATTACKER).as_of("2100-01-01T00:00:00Z").search((), query="passport", limit=50)
    ),
    "episode": lambda s: s.get_episode(f"ep-{VICTIM}", tenant_id=ATTACKER),
    "recall": lambda s: s.recall(ATTACKER, "passport"),
    "recall structured": lambda s: s.recall(ATTACKER, subjects=["mira"]),
}


def leaked(result: Any) -> bool:
    """Whether anything of the victim's is in `result` (its text, or its subject)."""
    return SECRET in repr(result) or f"{VICTIM}-subject" in repr(result)


@pytest.mark.parametrize(
    ("app", "isolated"),
    [(True, True), (False, False)],
    indirect=["app"],
    ids=["row-security", "without"],
)
@pytest.mark.parametrize("read", list(READS))
@pytest.mark.usefixtures("no_tenant_predicates")
def test_a_tenant_view_without_tenant_predicates(app: SGAMStore, isolated: bool, read: str) -> None:
    """With row security nothing of the victim's comes back; without, the same patched
    store leaks (the patches do remove the application's own wall)."""
    result = READS[read](app)
    assert leaked(result) is not isolated, result


@pytest.mark.parametrize("app", [True], indirect=True)
def test_the_app_role_cannot_take_the_all_tenant_scope(app: SGAMStore) -> None:
    with pytest.raises(TenantScopeError):
        app.search((), query="passport")
    with pytest.raises(TenantScopeError):
        app.list_namespaces()
    for all_tenants in (app.ledger, app.run_retention, app.sweep_ttl):
        with pytest.raises(TenantScopeError):
            all_tenants()
    with app.engine.tenant_scope(ATTACKER):  # inside a tenant's operation
        with pytest.raises(TenantScopeError), app.engine.tenant_scope(None):
            pass
        with pytest.raises(TenantScopeError):
            app.search((), query="passport")
        with pytest.raises(TenantScopeError):
            app.for_tenant(VICTIM).get(("mira",), "passport")


def test_the_database_refuses_the_all_tenant_setting_to_the_app_role(
    databases: dict[bool, str],
) -> None:
    """Even a session that sets sgam.all_tenants itself sees only its tenant: the
    all-tenant policy does not exist for the application role."""
    with psycopg.connect(databases[True], options="-c search_path=sgam") as conn:
        conn.execute("SELECT set_config('sgam.all_tenants', 'on', false)")
        assert conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 0
        conn.execute("SELECT set_config('sgam.tenant', %s, false)", (ATTACKER,))
        tenants = conn.execute("SELECT DISTINCT tenant_id FROM facts").fetchall()
        assert tenants == [(ATTACKER,)]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # WITH CHECK
            conn.execute(
                "INSERT INTO episodes (episode_id, tenant_id, source_kind, content, "
                "occurred_at, recorded_at) VALUES ('x', %s, 'user_message', 'x', now(), now())",
                (VICTIM,),
            )


def test_the_owner_bound_by_force_sees_everything_only_in_the_all_tenant_scope(
    pg_server: str,
) -> None:
    """A non-superuser owner runs setup(); FORCE binds it like any role, so a bare
    session of it sees no row, and its store (all-tenant scope) sees every tenant."""
    from tests import pg

    uri = pg.fresh_database()
    owner = "own_" + uuid.uuid4().hex[:12]
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {owner} LOGIN")
        conn.execute(f"GRANT CREATE ON DATABASE {urlsplit(uri).path[1:]} TO {owner}")
    with SGAMStore.from_conn_string(as_role(uri, owner), row_security=True) as store:
        store.setup()
        store.put((VICTIM, "mira"), "k", {"text": SECRET})
        store.put((ATTACKER, "mira"), "k", {"text": "x"})
        assert {ns[0] for ns in store.list_namespaces()} == {VICTIM, ATTACKER}
        assert len(store.search((), limit=10)) == 2
        # The owner's maintenance: all-tenant jobs, and VACUUM outside any transaction.
        assert {f.tenant_id for f in store.ledger()} == {VICTIM, ATTACKER}
        store.run_retention()
        store.vacuum()
    with psycopg.connect(as_role(uri, owner), options="-c search_path=sgam") as conn:
        assert conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 0


def test_the_app_role_cannot_turn_row_security_on(pg_server: str) -> None:
    """Row security is the owner's to turn on: an application role asking for it on a
    database without it gets a typed error, not a silent unprotected store."""
    from tests import pg

    uri = pg.fresh_database()
    with SGAMStore.from_conn_string(uri) as owner:
        owner.setup()
    role = "app_" + uuid.uuid4().hex[:12]
    roles.create_app_role(uri, role)
    store = SGAMStore(as_role(uri, role), row_security=True)
    with pytest.raises(ConfigurationError, match="owner"):
        store.setup()
    store.close()


def test_the_app_roles_grants_hold_the_store_contract(databases: dict[bool, str]) -> None:
    """What the application does, as the application role with only its grants, under
    row security: writes, reads, history, episodes, deletes, views."""
    with SGAMStore.from_conn_string(databases[True], index=_index()) as store:
        store.setup()
        view = store.for_tenant("contract")
        view.put(("kim",), "city", {"text": "lives in Lyon"})
        view.put(("kim",), "city", {"text": "moved to Porto"})
        view.put(("kim",), "pet", {"text": "a cat"}, ttl=60)
        assert view.get(("kim",), "city").value == {"text": "moved to Porto"}
        assert view.search(("kim",), query="Porto")[0].key == "city"
        assert view.list_namespaces() == [("kim",)]
        assert len(store.history("contract", "kim", "city")) == 2
        assert len(view.versions("contract", "kim", "city")) == 3  # with the retired copy
        assert {c.kind for c in view.changes("2000-01-01T00:00:00Z")} == {"new", "superseded"}
        assert {f.attribute for f in store.ledger("contract")} == {"city", "pet"}
        # The plain store, with each call naming one tenant, runs in that tenant's scope.
        assert store.get(("contract", "kim"), "city").value == {"text": "moved to Porto"}
        ep = store.record_episode("contract", "I moved", source_kind="user_message")
        result = store.apply_updates(
            [
                {
                    "evidence": "I moved",
                    "subject": "kim",
                    "attribute": "home",
                    "current_value": None,
                    "change": "new",
                    "value": "Porto",
                    "valid_from": "2026-01-01T00:00:00Z",
                }
            ],
            tenant_id="contract",
            episode_id=ep.episode_id,
        )
        assert result.written
        assert store.who_said(result.written[0], tenant_id="contract").episode_id == ep.episode_id
        context = store.recall("contract", "Porto")
        assert "Porto" in repr(context)
        view.delete(("kim",), "pet")
        assert view.get(("kim",), "pet") is None
        assert view.as_of(PAST).get(("kim",), "city") is None
        assert SECRET not in repr(view.search((), query="passport", limit=50))


def test_the_app_role_reviews_its_tenants_corrections(databases: dict[bool, str]) -> None:
    """The supersession review, LangMem's correction under a new key, as the application
    role under row security: it finds the tenant's memories and retires the old one (an
    unscoped read would see no row, and the correction would be dismissed silently)."""
    from sgam_store import resolve_supersessions
    from sgam_store.testing import ScriptedChatModel, verdicts

    with SGAMStore.from_conn_string(databases[True], index=_index()) as store:
        store.setup()
        view = store.for_tenant("reviewed")
        view.put(("ana",), "m1", {"content": "Ana's passport deadline is 2026-07-15"})
        view.put(("ana",), "m2", {"content": "Correction: Ana's deadline moved to 2026-06-30"})
        model = ScriptedChatModel(replies=[verdicts("supersedes")])
        report = resolve_supersessions(store, model, tenant_id="reviewed")
        assert report.reviewed == 1, report
        assert [i.key for i in view.search(("ana",))] == ["m2"]  # m1 is no longer current
        assert len(store.history("reviewed", "ana", "m1")) == 1  # closed, kept
        (decision,) = report.superseded
        m1 = store.history("reviewed", "ana", "m1")[0]
        assert [d.decision_id for d in store.supersession_decisions(m1)] == [decision.decision_id]
        store.undo_supersession(decision.decision_id, tenant_id="reviewed")
        assert sorted(i.key for i in view.search(("ana",))) == ["m1", "m2"]


def test_the_app_role_erases_its_tenants_rows(databases: dict[bool, str]) -> None:
    """A purge by the application role under row security erases the tenant's rows (an
    unscoped purge would see none and report nothing erased) and no other tenant's."""
    with SGAMStore.from_conn_string(databases[True], index=_index()) as store:
        store.setup()
        view = store.for_tenant("erased")
        view.put(("zoe",), "pin", {"text": "zoe pin 1234"})
        ep = store.record_episode("erased", "my pin is 1234", source_kind="user_message")
        report = store.purge("erased", "zoe")
        assert report.fact_ids, report
        assert view.get(("zoe",), "pin") is None
        assert store.history("erased", "zoe", "pin") == []
        assert store.purge_episode("erased", ep.episode_id).episode_ids == [ep.episode_id]
        assert store.get_episode(ep.episode_id, tenant_id="erased") is None
        assert store.for_tenant(ATTACKER).search((), query="umbrella")  # untouched
