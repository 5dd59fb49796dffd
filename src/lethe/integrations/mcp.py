"""An MCP memory server: a lethe memory kept in a store, served to agents through the Model Context Protocol.

:func:`server` builds a server (the official MCP SDK's ``MCPServer``) over one
:class:`~lethe.store.Shared` memory, with six tools an LLM calls:

* ``remember(text, importance?, pinned?, ttl?, key?)``: store a memory, get its key back;
* ``recall(query, k?)``: the memories most relevant to a query, rehearsed (each is
  strengthened, as remembering something strengthens it: ``Memory.recall``);
* ``search(query, k?)``: the same hits, without rehearsing them (``Memory.search``);
* ``forget(key)``: remove one memory;
* ``top(k?)``: the strongest memories now, whatever they are about (``Memory.top_scored``);
* ``stats()``: how many memories, how strong, and the memory's configuration.

Every write is one :meth:`~lethe.store.Shared.transact`, so several servers (processes)
on one store lose nothing; every read first catches up with what the others committed.
``lethe mcp`` runs one over an SQLite file (``docs/mcp.md``).  It needs the ``mcp``
extra: ``pip install 'lethe-decay[mcp]'``.
"""

import contextlib
import inspect
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from mcp_types import Tool as MCPTool
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from lethe import Entry, Memory, MemoryFullError, __version__
from lethe._memory.version import snapshot_of
from lethe.decay._adapter import name_of
from lethe.store import HistoryRewound, MemoryGone, Shared, StoreError
from lethe.store._records import utf8

__all__ = ["Forgotten", "Hit", "INSTRUCTIONS", "Remembered", "Stats", "server"]

_R = TypeVar("_R")
_F = TypeVar("_F", bound=Callable[..., Any])

#: What the server tells the model about itself (the ``instructions`` of its initialize result).
INSTRUCTIONS = (
    "A long-term memory whose entries fade unless used. Save durable facts, preferences and decisions "
    "with `remember`; before answering, `recall` what is relevant (recalling strengthens what it "
    "returns; `search` looks without strengthening). Each memory scores 0..1: it decays with time since "
    "its last use, slower with higher importance; pinned memories never fade. When the memory is full, "
    "the weakest memory is evicted to make room."
)

#: The most hits one call returns.
MAX_K = 100


class Hit(BaseModel):
    """One memory that recall, search or top returns."""

    model_config = ConfigDict(frozen=True)

    key: str | int = Field(description="The memory's key (what forget takes).")
    text: str = Field(description="What was remembered.")
    score: float = Field(
        description="recall and search: relevance to the query (0..1) plus a quarter of the memory's "
        "strength, which ranked it; top: its strength now (0..1)."
    )
    pinned: bool = Field(description="Pinned memories never fade and are never evicted.")
    access_count: int = Field(description="How many times it was recalled since it was remembered.")


class Forgotten(BaseModel):
    """A memory that left: the one forget removed, or one that remember evicted."""

    model_config = ConfigDict(frozen=True)

    key: str | int = Field(description="Its key.")
    text: str = Field(description="What it said.")


class Remembered(BaseModel):
    """What remember did."""

    model_config = ConfigDict(frozen=True)

    key: str | int = Field(description="The memory's key: the one given, or a fresh integer.")
    replaced: bool = Field(description="Whether a memory with that key was there before (it is replaced).")
    evicted: list[Forgotten] = Field(
        description="Memories removed by this write: the weakest when the memory was full, and any past their ttl."
    )


class Stats(BaseModel):
    """What stats says about the memory."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="The memory's name in its store.")
    version: int = Field(description="How many commits the memory has had (every write is one).")
    size: int = Field(description="How many memories it holds.")
    capacity: int = Field(description="The most it holds; a new memory at capacity evicts the weakest.")
    active: int = Field(description="How many score at least eviction_threshold.")
    pinned: int = Field(description="How many are pinned.")
    model: str = Field(description="The decay model (exponential, actr, fsrs, ...; custom for a function).")
    half_life_seconds: float = Field(
        description="After this long, an untouched memory of importance 1 scores 0.5 (for the exponential model)."
    )
    eviction_threshold: float = Field(description="The score below which a memory counts as faded.")
    mean_score: float | None = Field(description="The mean score now (null when empty).")
    median_score: float | None = Field(description="The median score now (null when empty).")
    oldest: str | None = Field(description="When the oldest memory held was remembered (ISO 8601, UTC).")
    newest: str | None = Field(description="When the newest memory held was remembered (ISO 8601, UTC).")


def _whole(value: object) -> object:
    """A float with no fraction as the int it is (JSON Schema's integers include 5.0)."""
    return int(value) if type(value) is float and value.is_integer() else value


# The tools' arguments, as the input schemas describe them to the model: strict, so an argument
# of another JSON type ("2" for a number, 1 for true) is a tool error naming it, not a guess.
_Text = Annotated[str, Field(min_length=1, description="What to remember: one self-contained fact, in plain words.")]
_Importance = Annotated[
    StrictFloat,
    Field(
        gt=0,
        allow_inf_nan=False,
        description="How much it matters, a multiplier on its strength: 1 is normal, 2 stays at full strength "
        "one half-life longer, 0.5 starts half as strong.",
    ),
]
_Pinned = Annotated[StrictBool, Field(description="Never fade nor evict it (standing rules, identity). Not with ttl.")]
_Ttl = Annotated[
    StrictFloat | None,
    Field(
        gt=0,
        allow_inf_nan=False,
        description="Seconds until it expires and is gone (e.g. 86400 for a day); leave out to keep it.",
    ),
]
def _sendable(key: object) -> object:
    """A key the answer can carry: text UTF-8 can encode (a lone surrogate cannot, and the
    answer naming the key would fail after the write)."""
    if isinstance(key, str) and not utf8(key):
        raise ValueError("must be text without lone surrogates")
    return key


_NewKey = Annotated[
    StrictStr | StrictInt | None,
    Field(description="A key to store it under, replacing any memory with that key; leave out for a fresh one."),
    AfterValidator(_sendable),
]
_Key = Annotated[
    StrictStr | StrictInt,
    Field(description="The key of the memory, as remember, recall, search or top gave it."),
    AfterValidator(_sendable),
]
_Query = Annotated[str, Field(min_length=1, description="What to look for, in words.")]
_K = Annotated[
    StrictInt,
    Field(ge=1, le=MAX_K, description=f"How many memories to return at most (1 to {MAX_K})."),
    BeforeValidator(_whole),
]


def _seconds(duration: timedelta | float) -> float:
    """``duration`` in seconds (a memory keeps its half-life so; its type says either)."""
    return duration.total_seconds() if isinstance(duration, timedelta) else float(duration)


def _shown(text: str) -> str:
    """``text`` as an answer can carry it: a lone surrogate (text other code wrote, from
    ``os.fsdecode`` say) escaped, ``\\udcff``, as JSON cannot hold one."""
    return text if utf8(text) else text.encode("utf-8", "backslashreplace").decode("utf-8")


def _key_out(key: Any) -> str | int:
    """``key`` as a tool returns it: a str or an int as it is, anything else as text."""
    return key if type(key) is int else _shown(key if type(key) is str else str(key))


def _text(entry: Entry[Any, Any]) -> str:
    """What an entry says: its value when a str, else its search text, else its value's repr."""
    value = entry.value
    if isinstance(value, str):
        return _shown(value)
    return _shown(entry.text if entry.text is not None else repr(value))


def _hit(entry: Entry[Any, Any], score: float) -> Hit:
    return Hit(
        key=_key_out(entry.key),
        text=_text(entry),
        score=round(score, 6),
        pinned=entry.pinned,
        access_count=entry.access_count,
    )


def _gone(entry: Entry[Any, Any]) -> Forgotten:
    return Forgotten(key=_key_out(entry.key), text=_text(entry))


#: The most digits an int key is read from (``int()`` refuses more than 4,300 by default).
_INT_DIGITS = 4300


def _held(mem: Memory[Any, Any], key: str | int) -> str | int | None:
    """The key of ``mem`` that ``key`` names, or None: ``key`` itself, else its other spelling
    (``"7"`` for the generated key ``7``, or ``7`` for the key ``"7"``), as a model may give either.
    Only the int's own spelling names it: ``"007"`` is a key of its own, never ``7``."""
    if key in mem:
        return key
    if isinstance(key, int):
        other: str | int = str(key)
    elif key.isascii() and key.removeprefix("-").isdecimal() and len(key) <= _INT_DIGITS and str(int(key)) == key:
        other = int(key)  # (a key may be any int, past 2**64 too: JSON clients often send those as text)
    else:
        return None
    return other if other in mem else None


def _checked(what: Callable[[], _R]) -> _R:
    """``what()``, a lethe call: its ValueError, TypeError or MemoryFullError becomes a
    :class:`ToolError` (the model reads it), and so does a store that cannot be written."""
    try:
        return what()
    except (ValueError, TypeError, MemoryFullError) as exc:
        raise ToolError(str(exc)) from None
    except StoreError as exc:
        raise ToolError(f"the store cannot be used now: {exc}") from None


def _brief(value: object) -> str:
    """The start of ``value``'s repr (an int too long for one: how many digits it has)."""
    try:
        return repr(value)[:60]
    except ValueError:  # (int's 4,300-digit limit)
        return f"an int of about {int(value.bit_length() * 0.30103)} digits" if isinstance(value, int) else "?"


def _said(tool: str, invalid: ValidationError) -> str:
    """A validation error as a model reads it best: each argument, what is wrong, what it got."""
    parts = []
    for error in invalid.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        got = "" if error["type"] == "missing" else f" (got {_brief(error.get('input'))})"
        parts.append(f"{where}: {error['msg']}{got}")
    return f"{tool}: " + "; ".join(parts)


def _described(fn: Callable[..., Any]) -> str:
    """``fn``'s docstring as a tool's description: its paragraphs, each on one line.  A model
    reads the description as it is sent, so no source indentation and no line broken
    mid-sentence (the SDK sends the docstring as written).

    >>> def tool() -> None:
    ...     '''Find what matters,
    ...     best first.
    ...
    ...     Then stop.'''
    >>> _described(tool)
    'Find what matters, best first.\\n\\nThen stop.'
    """
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in inspect.cleandoc(fn.__doc__ or "").split("\n\n"))


#: The structured result of a tool that found no hits (the SDK wraps a list so).
_NO_HITS: dict[str, Any] = {"result": []}


class _Server(MCPServer):
    """``MCPServer`` whose tool errors for bad arguments are one plain line per argument, whose
    tools refuse arguments they do not take, and whose answer of no hits is the text ``[]`` too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.takes: dict[str, frozenset[str]] = {}  # each tool's arguments, by the tool's name

    async def list_tools(self) -> list[MCPTool]:
        # (the SDK's argument models ignore what they do not declare: say that they refuse it)
        return [
            tool.model_copy(update={"input_schema": {**tool.input_schema, "additionalProperties": False}})
            for tool in await super().list_tools()
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        unknown = sorted(set(arguments) - self.takes.get(name, frozenset(arguments)))
        if unknown:  # (a misspelled ttl would otherwise keep a memory for ever)
            raise ToolError(f"{name}: unknown argument {unknown[0]!r}; it takes {sorted(self.takes[name]) or 'none'}")
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(_said(name, exc.__cause__)) from exc.__cause__
            raise
        if isinstance(result, CallToolResult) and not result.content and result.structured_content == _NO_HITS:
            # The SDK gives each hit a text block of its own, so no hits would be no text at all:
            # a client that reads only text could not tell an answer from none.
            return result.model_copy(update={"content": [TextContent(type="text", text="[]")]})
        return result


def server(shared: Shared[Any, Any], *, name: str = "lethe", instructions: str | None = INSTRUCTIONS) -> MCPServer:
    """An MCP server whose tools read and write ``shared``: ``remember``, ``recall``,
    ``search``, ``forget``, ``top`` and ``stats`` (see the module's docstring, and
    ``docs/mcp.md`` for their arguments).

    Each write is one :meth:`~lethe.store.Shared.transact` (it retries on a lost race, so
    servers in several processes on one store lose nothing); each read first catches up
    (:meth:`~lethe.store.Shared.current`).  Tools run in worker threads, as the SDK runs
    plain functions.  Bad arguments (``k`` < 1, an importance <= 0, an unknown key, ...)
    give tool errors (``isError`` results naming the argument), and the server keeps
    serving.  Keys are what ``put`` makes (fresh integers) or what ``remember`` is given;
    values are kept as text, and a value that is not one (a memory written by other code)
    is shown as its search text or its repr.

    Args:
        shared: The memory to serve.  Its decay model, capacity and thresholds are its own
            (stored with it); its ``clock_fn`` says when "now" is.
        name: The server's name, as clients show it.
        instructions: What the server tells the model about the memory (default
            :data:`INSTRUCTIONS`); None for none.

    Returns:
        The server (not yet serving): ``.run()`` serves it over stdio until the client
        goes, ``.run("streamable-http", host=..., port=...)`` over HTTP, and
        ``.streamable_http_app()`` is an ASGI application to mount.

    A tool that fails (a bad argument, a store that cannot be written) answers with a
    tool error, and the server goes on: nothing is raised to the caller.  A memory gone
    from the store behind the server's back (dropped, or a server restarted without it) is
    made afresh, empty, as it was configured, at the next call (``shared.reopened()``;
    ``shared`` itself is left as it is).

    Serving a memory of an SQLite file over stdio, as ``lethe mcp`` does::

        with SQLiteStore("memory.db") as store:
            server(Shared(store, "memory", Memory(max_entries=1000))).run()

    The tools called directly, in this process (a client calls them through a transport,
    and gets an error as an ``isError`` result):

    >>> import asyncio
    >>> from lethe import Memory
    >>> from lethe.store import InMemoryStore, Shared
    >>> app = server(Shared(InMemoryStore(), "notes", Memory(max_entries=100)))
    >>> print(*sorted(tool.name for tool in asyncio.run(app.list_tools())))
    forget recall remember search stats top
    >>> asyncio.run(app.call_tool("remember", {"text": "Ada likes green tea"})).structured_content
    {'key': 0, 'replaced': False, 'evicted': []}
    >>> hits = asyncio.run(app.call_tool("recall", {"query": "what does Ada drink?"})).structured_content
    >>> for hit in hits["result"]:
    ...     print(hit["key"], hit["text"], hit["access_count"])
    0 Ada likes green tea 1
    """
    app = _Server(name, instructions=instructions, version=__version__)
    reading = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    def tool(annotations: ToolAnnotations) -> Callable[[_F], _F]:
        def register(fn: _F) -> _F:
            app.takes[fn.__name__] = frozenset(inspect.signature(fn).parameters)
            return app.tool(annotations=annotations, description=_described(fn))(fn)

        return register

    served = [shared]  # the replica the tools use: another once its memory was gone
    swapping = threading.Lock()

    def using(use: Callable[[Shared[Any, Any]], _R]) -> _R:
        """``use(the served replica)``, a tool's lethe call (see :func:`_checked`).  A memory
        gone from the store behind the server's back (another client's drop, a Redis
        restarted without persistence) is made afresh, empty, as it was configured
        (:meth:`~lethe.store.Shared.reopened`), and ``use`` runs once more on that; so it
        does on a replica that found the memory's history gone back, which follows it then."""

        def run() -> _R:
            for _ in range(2):
                replica = served[0]
                try:
                    return use(replica)
                except MemoryGone:
                    with swapping:
                        if served[0] is replica:
                            # (a ValueError: made again meanwhile with another configuration by
                            # another client; the old replica follows that one, once told)
                            with contextlib.suppress(ValueError):
                                served[0] = replica.reopened()
                except HistoryRewound:
                    pass  # (nothing was written, and the replica follows the memory as it is now)
            return use(served[0])

        return _checked(run)

    def current() -> Memory[Any, Any]:
        return using(Shared.current)

    @tool(ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
    def remember(
        text: _Text,
        importance: _Importance = 1.0,
        pinned: _Pinned = False,
        ttl: _Ttl = None,
        key: _NewKey = None,
    ) -> Remembered:
        """Save one fact, preference or decision to long-term memory; returns its key.

        Memories fade unless recalled; give important ones a higher importance, pin standing
        rules, and give temporary facts a ttl (seconds). A key replaces the memory under it."""
        if pinned and ttl is not None:
            raise ToolError("ttl: a pinned memory never expires; give pinned or ttl, not both")

        def put(mem: Memory[Any, Any]) -> tuple[Memory[Any, Any], Remembered]:
            held = None if key is None else _held(mem, key)
            target = held if held is not None else key
            new = mem.put(text, key=target, importance=importance, pinned=pinned, ttl=ttl)
            evicted = list(new.evicted)
            made = snapshot_of(new).next_key - 1 if target is None else target
            while target is None and str(made) in new:
                # The generated key's spelling as text is another memory's key ("7" was given for a
                # ticket): the model could not tell the two apart, and a second forget("7") would
                # remove the other one.  The next key instead.
                new = new.delete(made).put(text, importance=importance, pinned=pinned, ttl=ttl)
                evicted += new.evicted
                made = snapshot_of(new).next_key - 1
            return new, Remembered(key=_key_out(made), replaced=held is not None, evicted=[_gone(e) for e in evicted])

        return using(lambda replica: replica.transact(put))

    @tool(ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
    def recall(query: _Query, k: _K = 5) -> list[Hit]:
        """Find the memories most relevant to a query, best first, and strengthen them (each
        recall keeps a memory from fading). Use it before answering anything the memory may know."""
        hits = using(lambda replica: replica.transact(lambda mem: mem.recall(query, k)))
        return [_hit(entry, number) for entry, number in hits]

    @tool(reading)
    def search(query: _Query, k: _K = 5) -> list[Hit]:
        """Find the memories most relevant to a query, best first, without strengthening them."""
        return [_hit(entry, number) for entry, number in _checked(lambda: current().search(query, k))]

    @tool(ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False))
    def forget(key: _Key) -> Forgotten:
        """Remove the memory with this key for good (when it is wrong or no longer wanted)."""

        def delete(mem: Memory[Any, Any]) -> tuple[Memory[Any, Any], Forgotten]:
            held = _held(mem, key)
            if held is None:
                raise ToolError(f"key: no memory has the key {key!r} (it may have faded, expired or been forgotten)")
            return mem.delete(held), _gone(mem.peek(held))

        return using(lambda replica: replica.transact(delete))

    @tool(reading)
    def top(k: _K = 10) -> list[Hit]:
        """The strongest memories now, whatever they are about, strongest first (score 0..1)."""
        return [_hit(entry, score) for entry, score in _checked(lambda: current().top_scored(k))]

    @tool(reading)
    def stats() -> Stats:
        """How many memories there are, how strong, and how the memory decays and is bounded."""
        mem, version = using(lambda replica: (replica.current(), replica.version))
        summary = mem.stats()
        model = name_of(mem.decay_fn)
        return Stats(
            name=shared.name,
            version=version,
            size=summary.size,
            capacity=mem.max_entries,
            active=summary.active,
            pinned=summary.pinned,
            model=model if model is not None else "custom",
            half_life_seconds=_seconds(mem.half_life),
            eviction_threshold=mem.eviction_threshold,
            mean_score=None if summary.mean_score is None else round(summary.mean_score, 6),
            median_score=None if summary.median_score is None else round(summary.median_score, 6),
            oldest=None if summary.oldest_entry is None else summary.oldest_entry.isoformat(),
            newest=None if summary.newest_entry is None else summary.newest_entry.isoformat(),
        )

    return app
