"""The application role of a row-secured store: a login that neither owns SGAM's tables
nor is a superuser (both would bypass the tenant policies), with exactly the grants the
store's operations need.

The tables' owner runs `setup()` (migrations, `row_security=True`), `set_language`,
`vacuum` and the all-tenant operations; the application role reads and writes rows in
one tenant's scope. Run `create_app_role` as the owner (a role with CREATEROLE, or with
the role already created by a DBA), after the first `setup()`: the default privileges
it sets cover the vector table a later `setup()` with an index creates.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from sgam_store.engines.postgres import connection

# Row statements on every table; sgam_meta (schema version, language, layout) is read only.
ROW_PRIVILEGES = "SELECT, INSERT, UPDATE, DELETE"


def grants_sql(role: str, *, schema: str = connection.DEFAULT_SCHEMA) -> list[sql.Composed]:
    """What the application role `role` is granted in `schema`, to run as the tables'
    owner: row statements on every table (sgam_meta read only), and the sequences."""
    r, s = sql.Identifier(role), sql.Identifier(connection.check_schema_name(schema))
    privileges = sql.SQL(ROW_PRIVILEGES)
    return [
        sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(s, r),
        sql.SQL("GRANT {} ON ALL TABLES IN SCHEMA {} TO {}").format(privileges, s, r),
        sql.SQL("REVOKE INSERT, UPDATE, DELETE ON {}.sgam_meta FROM {}").format(s, r),
        # Row ids come from sequences (nextval needs USAGE).
        sql.SQL("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {} TO {}").format(s, r),
        # The vector table is created by a later setup() with an index: the same grants.
        sql.SQL("ALTER DEFAULT PRIVILEGES IN SCHEMA {} GRANT {} ON TABLES TO {}").format(
            s, privileges, r
        ),
        sql.SQL(
            "ALTER DEFAULT PRIVILEGES IN SCHEMA {} GRANT USAGE, SELECT ON SEQUENCES TO {}"
        ).format(s, r),
    ]


def create_app_role(
    conninfo: str,
    role: str,
    *,
    schema: str = connection.DEFAULT_SCHEMA,
    password: str | None = None,
) -> None:
    """Create the login `role` unless it exists (neither superuser nor BYPASSRLS), and
    grant it the store's needs (`grants_sql`), connected to `conninfo` as the tables'
    owner; one transaction: all of it or none."""
    with psycopg.connect(conninfo) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
        if exists is None:
            create = sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS").format(
                sql.Identifier(role)
            )
            if password is not None:
                create = sql.SQL("{} PASSWORD {}").format(create, sql.Literal(password))
            conn.execute(create)
        for statement in grants_sql(role, schema=schema):
            conn.execute(statement)
