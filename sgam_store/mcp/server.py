"""The MCP server: `TenantMemory`'s calls as tools, each subject as a resource, and a
prompt on corrections, on the official SDK's FastMCP (no framework of our own).

A tool answers with a `CallToolResult` built here: on success its JSON as structured
content (and as text, for clients that read only text); on a refused argument an error
result (`isError`) whose structured content names the field, the reason and the error
type, with nothing written. Read-only servers do not offer the write tools at all.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.fastmcp import Context, FastMCP
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, Resource, TextContent, ToolAnnotations
from pydantic import Field

from sgam_store import SGAMStore
from sgam_store.mcp.memory import SEARCH_LIMIT, FieldError, TenantMemory

NAME = "sgam-memory"
URI = "sgam://{subject}"
DEFAULT_SPEAKER = "mcp-client"  # when the client sent no name in its initialize request
ToolFn = Callable[..., CallToolResult]
READ = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)
WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)

Subject = Annotated[
    str,
    Field(
        description="Who or what the fact is about, e.g. 'mira' or 'mira.passport' "
        "(lowercased; spaces become '_', '.' separates parts)."
    ),
]
Attribute = Annotated[
    str, Field(description="The property, in snake_case, e.g. 'passport_deadline'.")
]
Instant = Annotated[
    str | None,
    Field(description="An ISO-8601 instant with 'Z' or a UTC offset, e.g. 2026-06-02T00:00:00Z."),
]
Value = Annotated[
    str | int | float | bool | dict[str, Any] | list[Any],
    Field(description="The value: a string, number, boolean, list or JSON object."),
]

INSTRUCTIONS = (
    "Long-term memory of typed facts with validity intervals and sources, for one tenant. "
    "Call recall before answering a question that depends on something the user told you "
    "earlier; call remember when the user states or corrects a fact worth keeping, quoting "
    "their words as evidence. A correction is just remember with the new value: the old "
    "value is kept as history, never overwritten."
)

CORRECTION_PROMPT = """\
You have a long-term memory through the `remember`, `recall` and `history` tools.

When the user corrects something they told you before, do not forget the old fact and
do not invent a new attribute name. Call `remember` with the SAME subject and attribute
and the new value. Pass `valid_from` only when the user says when the new value starts,
and quote the user's own words as `evidence`. The memory closes the old value where the
new one starts and keeps it as history, with who said each one.

Example. On June 1 Mira said: "My passport renewal deadline is 2026-07-15." You called
  remember(subject="mira", attribute="passport_deadline", value="2026-07-15",
           evidence="My passport renewal deadline is 2026-07-15.")
On June 3 she says: "Sorry, the consulate moved it: the deadline is 2026-06-30." Call
  remember(subject="mira", attribute="passport_deadline", value="2026-06-30",
           evidence="the consulate moved it: the deadline is 2026-06-30")
The answer shows `before` (2026-07-15) and `now` (2026-06-30). Afterwards:
- recall(subject="mira") answers 2026-06-30 now;
- recall(subject="mira", valid_at="2026-06-02T00:00:00Z") answers 2026-07-15, what
  held on June 2;
- history(subject="mira", attribute="passport_deadline") lists both, with their sources.
{situation}"""


def ok(data: dict[str, Any]) -> CallToolResult:
    """A tool's answer: structured content, and the same JSON as text."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)], structuredContent=data)


def refused(error: FieldError) -> CallToolResult:
    """A refused argument as an MCP tool error that names the field; nothing was written."""
    data = {"error": error.as_dict(), "written": False}
    text = f"Refused, nothing written. {error.field}: {error.message}"
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structuredContent=data, isError=True
    )


def answer(call: Callable[[], dict[str, Any]]) -> CallToolResult:
    try:
        return ok(call())
    except FieldError as error:
        return refused(error)


def tool(server: FastMCP[Any], annotations: ToolAnnotations) -> Callable[[ToolFn], ToolFn]:
    """Register a function as a tool whose description is its docstring, dedented (the
    text a model reads to decide when to call it)."""

    def register(fn: ToolFn) -> ToolFn:
        description = inspect.cleandoc(fn.__doc__ or "")
        server.add_tool(fn, description=description, annotations=annotations)
        return fn

    return register


def speaker(ctx: Context[Any, Any, Any]) -> str:
    """The client's name from its initialize request: the speaker of what it records."""
    params = ctx.session.client_params
    return params.clientInfo.name if params is not None else DEFAULT_SPEAKER


class MemoryServer(FastMCP[Any]):
    """FastMCP with the tenant's subjects listed as resources, read when listed."""

    def __init__(self, memory: TenantMemory, **settings: Any) -> None:
        super().__init__(NAME, instructions=INSTRUCTIONS, **settings)
        self.memory = memory

    async def list_resources(self) -> list[Resource]:
        return [
            Resource(
                uri=URI.format(subject=s),  # type: ignore[arg-type]
                name=s,
                description=f"What is true now about {s}, with sources",
                mimeType="text/plain",
            )
            for s in self.memory.subjects()
        ]


def create_server(
    store: SGAMStore,
    tenant: str,
    *,
    read_only: bool = False,
    transport_security: TransportSecuritySettings | None = None,
) -> FastMCP[Any]:
    """An MCP server over `tenant`'s memory in `store`. `read_only` offers the read tools
    only; `transport_security` holds the Host and Origin rules of the HTTP transport."""
    memory = TenantMemory(store, tenant)
    server = MemoryServer(memory, log_level="WARNING", transport_security=transport_security)
    add_read_tools(server, memory)
    if not read_only:
        add_write_tools(server, memory)
    add_resources(server, memory)
    server.prompt(name="correct_a_fact", title="Correcting a remembered fact")(correction_prompt)
    return server


def correction_prompt(situation: str = "") -> str:
    """How to record a correction with `remember`, with the passport example."""
    return CORRECTION_PROMPT.format(situation=f"\nNow: {situation}\n" if situation else "")


def add_write_tools(server: FastMCP[Any], memory: TenantMemory) -> None:
    @tool(server, WRITE)
    def remember(
        subject: Subject,
        attribute: Attribute,
        value: Value,
        evidence: Annotated[
            str, Field(description="The user's own words that state it, quoted exactly.")
        ],
        ctx: Context[Any, Any, Any],
        valid_from: Annotated[
            str | None,
            Field(
                description="When the value starts to hold (ISO-8601 with 'Z'), only if "
                "the user says; default: now."
            ),
        ] = None,
        memory_type: Annotated[
            str | None, Field(description="Optional kind: preference, profile, task_state...")
        ] = None,
    ) -> CallToolResult:
        """Save a fact to long-term memory, or correct one.

        Call it when the user states something worth keeping (a deadline, a preference, a
        name) or changes something they said before. For a correction use the same
        subject and attribute with the new value: the old value is kept as history.
        Returns `before` (what was current), `written` (the fact stored, with its source)
        and `now` (what is current after the write).
        """
        return answer(
            lambda: memory.remember(
                subject,
                attribute,
                value,
                evidence,
                valid_from=valid_from,
                memory_type=memory_type,
                speaker=speaker(ctx),
            )
        )

    @tool(server, WRITE)
    def forget(subject: Subject, attribute: Attribute) -> CallToolResult:
        """Stop treating a fact as current.

        Call it when the user says something no longer holds (and gives no new value;
        for a new value use remember). The fact is closed now and kept in history
        (recall as of an earlier date still finds it). Returns the fact as it was closed.
        """
        return answer(lambda: memory.forget(subject, attribute))


def add_read_tools(server: FastMCP[Any], memory: TenantMemory) -> None:
    @tool(server, READ)
    def recall(
        question: Annotated[
            str | None, Field(description="The question to answer, in the user's words.")
        ] = None,
        subject: Annotated[
            str | None, Field(description="Only this subject's facts, e.g. 'mira'.")
        ] = None,
        valid_at: Annotated[
            str | None,
            Field(description="Answer as of this instant (ISO-8601 with 'Z'); default now."),
        ] = None,
        known_at: Annotated[
            str | None,
            Field(description="Answer as the memory believed it at this instant; default now."),
        ] = None,
    ) -> CallToolResult:
        """Look up what memory holds before answering from it: the smallest cited context.

        Call it when a question depends on something the user said earlier, or asks what
        was true at a past date (`valid_at`) or what was believed then (`known_at`).
        Returns `text` to read, and `facts` (current ones first, each with its source),
        `evidence` found by search, and `history` (the values they replaced).
        """
        return answer(
            lambda: memory.recall(question, subject, valid_at=valid_at, known_at=known_at)
        )

    @tool(server, READ)
    def search(
        query: Annotated[str, Field(description="Words to look for.")],
        subject: Annotated[str | None, Field(description="Only under this subject.")] = None,
        limit: Annotated[int, Field(description=f"At most this many, 1 to {SEARCH_LIMIT}.")] = 10,
    ) -> CallToolResult:
        """Search current facts by keywords (and meaning, when the server has embeddings).

        Call it to find facts when you do not know their subject or attribute. Returns
        `results`, best first, each with a `score` between 0 and 1 and its source.
        """
        return answer(lambda: memory.search(query, subject, limit))

    @tool(server, READ)
    def history(
        subject: Subject,
        attribute: Attribute,
        known_at: Annotated[
            str | None,
            Field(description="Show the versions as believed at this instant; default now."),
        ] = None,
    ) -> CallToolResult:
        """Show every value a fact has had, when each held, and who said it.

        Call it when the user asks how something changed, what it used to be, or where a
        value came from. Returns `versions` in valid time (each with valid_from, valid_to
        and its source) and `all_versions`, which adds belief time (known_from, known_to).
        """
        return answer(lambda: memory.history(subject, attribute, known_at))

    @tool(server, READ)
    def what_changed(
        since: Annotated[str, Field(description="ISO-8601 instant with 'Z'.")],
        limit: Annotated[
            int, Field(description=f"At most this many, 1 to {SEARCH_LIMIT}.")
        ] = SEARCH_LIMIT,
    ) -> CallToolResult:
        """List what memory recorded since an instant: new facts, corrections, closings.

        Call it to catch up on what changed since you last looked. Returns `changes`,
        newest first, each with its kind (new, superseded, closed, expired, revised).
        """
        return answer(lambda: memory.what_changed(since, limit))


def add_resources(server: FastMCP[Any], memory: TenantMemory) -> None:
    @server.resource(URI, name="subject", mime_type="text/plain")
    def current_facts(subject: str) -> str:
        """A subject's current facts, each with its validity and source."""
        return memory.current(subject)
