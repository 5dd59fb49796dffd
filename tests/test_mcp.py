"""``lethe mcp``, the MCP memory server, driven by the MCP SDK's own client.

The server runs as ``python -m lethe mcp`` in a subprocess, over stdio (the SDK's
``stdio_client`` starts it) and over streamable HTTP; what it wrote is read back
from its SQLite file with :class:`lethe.store.Shared`.  One test serves a memory
in this process (``lethe.integrations.mcp.server``) on a manual clock, for decay.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest

from lethe import ManualClock, Memory
from lethe._cli import main
from lethe.store import InMemoryStore, Shared, SQLiteStore

pytest.importorskip("mcp")

from mcp.client import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from lethe.integrations.mcp import server

TOOLS = {"remember", "recall", "search", "forget", "top", "stats"}
#: The flags every server here is started with: a memory the test opens again with ``TEMPLATE``.
FLAGS = ("--capacity", "200", "--model", "exponential", "--half-life", "1h")


def template() -> Memory[Any, str]:
    """The configuration ``FLAGS`` create, to read the file back with."""
    return Memory(max_entries=200, half_life=timedelta(hours=1))


def run(main: Callable[[], Awaitable[None]]) -> None:
    """``main()`` on an event loop, within a minute."""

    async def bounded() -> None:
        with anyio.fail_after(60):
            await main()

    anyio.run(bounded)


@asynccontextmanager
async def stdio(db: Path, log: Path, *flags: str) -> AsyncIterator[ClientSession]:
    """A session with ``python -m lethe mcp --db DB FLAGS`` over stdio (its stderr in ``log``)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "lethe", "mcp", "--db", str(db), *flags])
    with log.open("a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def call(session: ClientSession | Client, tool: str, **arguments: Any) -> Any:
    """The structured result of a successful call (a list comes wrapped as ``{"result": [...]}``)."""
    result = await session.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    assert not result.is_error, result.content
    data = result.structured_content
    assert data is not None
    return data["result"] if set(data) == {"result"} else data


async def error(session: ClientSession | Client, tool: str, **arguments: Any) -> str:
    """The message of a call that must fail as a tool error (an ``isError`` result)."""
    result = await session.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    assert result.is_error, result
    return " ".join(getattr(block, "text", "") for block in result.content)


def read_back(db: Path) -> Memory[Any, str]:
    """The memory the servers wrote, read from the file at its latest version."""
    with SQLiteStore(db) as store:
        return Shared(store, "memory", template()).current()


# -- over stdio ------------------------------------------------------------------


def test_lists_six_tools_with_typed_described_arguments(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio(tmp_path / "m.db", tmp_path / "log", *FLAGS) as session:
            listed = await session.list_tools()
            tools = {tool.name: tool for tool in listed.tools}
            assert set(tools) == TOOLS
            for tool in tools.values():
                assert tool.description, tool.name
                assert len(tool.description) < 400, tool.name
                assert tool.input_schema["type"] == "object"
                assert tool.output_schema is not None, tool.name  # results come back as structured content
                for name, prop in tool.input_schema.get("properties", {}).items():
                    assert prop.get("description"), (tool.name, name)

            remember = tools["remember"].input_schema
            assert remember["required"] == ["text"]
            props = remember["properties"]
            assert props["text"]["type"] == "string"
            assert props["text"]["minLength"] == 1
            assert props["importance"] == {
                **props["importance"],
                "type": "number",
                "exclusiveMinimum": 0,
                "default": 1.0,
            }
            assert props["pinned"]["type"] == "boolean"
            assert props["pinned"]["default"] is False
            assert {"type": "number", "exclusiveMinimum": 0} in props["ttl"]["anyOf"]
            assert "seconds" in props["ttl"]["description"].lower()
            assert {"type": "string"} in props["key"]["anyOf"]
            assert {"type": "integer"} in props["key"]["anyOf"]

            for name, default in (("recall", 5), ("search", 5), ("top", 10)):
                k = tools[name].input_schema["properties"]["k"]
                assert (k["type"], k["minimum"], k["default"]) == ("integer", 1, default)
            for name in ("recall", "search"):
                assert tools[name].input_schema["required"] == ["query"]
            assert tools["forget"].input_schema["required"] == ["key"]
            assert tools["stats"].input_schema.get("properties", {}) == {}

            hit = tools["search"].output_schema
            assert hit is not None
            assert {"key", "text", "score"} <= set(hit["$defs"]["Hit"]["properties"])
            hints = {name: tool.annotations for name, tool in tools.items() if tool.annotations is not None}
            assert set(hints) == TOOLS
            assert {name for name, hint in hints.items() if hint.read_only_hint} == {"search", "top", "stats"}
            assert {name for name, hint in hints.items() if hint.destructive_hint} == {
                "forget"
            }  # recall only rehearses

    run(main)


def test_remember_search_recall_top_stats_forget(tmp_path: Path) -> None:
    db = tmp_path / "m.db"

    async def main() -> None:
        async with stdio(db, tmp_path / "log", *FLAGS) as session:
            tea = await call(session, "remember", text="Ada drinks green tea every morning")
            assert tea == {"key": 0, "replaced": False, "evicted": []}  # a fresh key, made by put
            vim = await call(session, "remember", text="Ada's editor is vim", key="editor", importance=2.0)
            assert vim["key"] == "editor"
            rule = await call(session, "remember", text="Never email the CEO directly", pinned=True)
            assert rule["key"] == 1
            again = await call(session, "remember", text="Ada's editor is emacs now", key="editor")
            assert again == {"key": "editor", "replaced": True, "evicted": []}

            hits = await call(session, "search", query="what tea does Ada drink?")
            assert hits[0]["key"] == 0
            assert hits[0]["text"] == "Ada drinks green tea every morning"
            assert hits[0]["score"] > 1.0  # its relevance (1.0 for the best match) plus a quarter of its strength
            assert all(h["access_count"] == 0 for h in hits)  # search observes

            recalled = await call(session, "recall", query="Ada's editor", k=1)
            assert [(h["key"], h["text"], h["access_count"]) for h in recalled] == [
                ("editor", "Ada's editor is emacs now", 1)
            ]
            top = {h["key"]: h for h in await call(session, "top", k=10)}
            assert set(top) == {0, 1, "editor"}
            assert top["editor"]["access_count"] == 1
            assert top[0]["access_count"] == 0
            assert top[1]["pinned"]
            assert top[1]["score"] == 1.0
            assert all(0.0 < h["score"] <= 1.0 for h in top.values())

            stats = await call(session, "stats")
            assert stats["size"] == 3
            assert stats["pinned"] == 1
            assert stats["capacity"] == 200
            assert stats["model"] == "exponential"
            assert stats["half_life_seconds"] == 3600.0
            assert stats["name"] == "memory"
            assert stats["version"] == 5
            assert 0.0 < stats["mean_score"] <= 1.0
            assert stats["oldest"] <= stats["newest"]

            gone = await call(session, "forget", key="0")  # a model may spell an integer key as text
            assert gone == {"key": 0, "text": "Ada drinks green tea every morning"}
            assert await call(session, "search", query="tea") == []
            assert (await call(session, "stats"))["size"] == 2

    run(main)
    mem = read_back(db)  # what the server committed, read back from the file
    assert sorted(map(str, mem.keys())) == ["1", "editor"]
    assert mem.peek("editor").access_count == 1
    assert mem.peek("editor").importance == 1.0
    assert mem.peek(1).pinned
    assert mem.peek(1).value == "Never email the CEO directly"


def test_bad_arguments_are_tool_errors_and_the_server_goes_on(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio(tmp_path / "m.db", tmp_path / "log", *FLAGS) as session:
            await call(session, "remember", text="deploy failed on node 7", key="deploy")
            bad: list[tuple[str, dict[str, Any], str]] = [
                ("search", {"query": "deploy", "k": 0}, "k"),
                ("recall", {"query": "deploy", "k": -3}, "k"),
                ("top", {"k": "many"}, "k"),
                ("search", {"query": 7}, "query"),
                ("search", {"k": 2}, "query"),
                ("remember", {"text": ""}, "text"),
                ("remember", {"text": "x", "importance": 0}, "importance"),
                ("remember", {"text": "x", "importance": "high"}, "importance"),
                ("remember", {"text": "x", "ttl": -5}, "ttl"),
                ("remember", {"text": "x", "ttl": 1e300}, "ttl"),  # a deadline past datetime.max: lethe's own check
                ("remember", {"text": "x", "pinned": True, "ttl": 60}, "ttl"),
                ("remember", {"text": "x", "pinned": "maybe"}, "pinned"),
                ("forget", {"key": "nobody"}, "key"),
                ("forget", {}, "key"),
                ("forget", {"key": True}, "key"),  # a JSON true is no key (not the key 1)
                ("remember", {"text": "x", "key": False}, "key"),
                # Another JSON type is not taken for the one asked for.
                ("remember", {"text": "x", "pinned": 1}, "pinned"),
                ("remember", {"text": "x", "pinned": "yes"}, "pinned"),
                ("remember", {"text": "x", "importance": "2"}, "importance"),
                ("remember", {"text": "x", "importance": True}, "importance"),
                ("remember", {"text": "x", "ttl": "60"}, "ttl"),
                ("top", {"k": "3"}, "k"),
                ("top", {"k": 2.5}, "k"),
            ]
            for tool, arguments, named in bad:
                message = await error(session, tool, **arguments)
                assert named in message, (tool, arguments, message)
                assert "pydantic" not in message, message  # one plain line per argument, for the model
            assert len(await call(session, "top", k=2.0)) == 1  # (a JSON integer may be written 2.0)
            unknown = await session.call_tool("remind", {"text": "x"})
            assert unknown.is_error
            # Nothing bad was written, and the server still answers.
            stats = await call(session, "stats")
            assert stats["size"] == 1
            assert stats["version"] == 1
            assert [h["key"] for h in await call(session, "recall", query="node 7")] == ["deploy"]

    run(main)


def test_two_servers_on_one_file_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    SQLiteStore(db).close()  # one file, created before both start

    async def main() -> None:
        async with (
            stdio(db, tmp_path / "log-a", *FLAGS) as a,
            stdio(db, tmp_path / "log-b", *FLAGS) as b,
        ):

            async def write(session: ClientSession, who: str) -> None:
                for i in range(50):
                    await call(session, "remember", text=f"note {i} from server {who}")

            async with anyio.create_task_group() as group:
                group.start_soon(write, a, "a")
                group.start_soon(write, b, "b")
            # Each server catches up before it reads: both see all hundred.
            assert (await call(a, "stats"))["size"] == 100
            assert (await call(b, "stats"))["size"] == 100
            assert [h["text"] for h in await call(a, "search", query="note 7 server b", k=1)] == [
                "note 7 from server b"
            ]

    run(main)
    mem = read_back(db)
    texts = sorted(entry.value for entry in mem.top(len(mem)))
    assert texts == sorted(f"note {i} from server {who}" for i in range(50) for who in "ab")
    assert sorted(mem.keys()) == list(range(100))  # every fresh key made once, none twice


# -- over streamable HTTP --------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    """Return once ``port`` on 127.0.0.1 accepts connections (the server is up)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the server exited ({process.returncode}): {log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"the server did not listen on {port}: {log.read_text()}")


def test_streamable_http(tmp_path: Path) -> None:
    db, log, port = tmp_path / "m.db", tmp_path / "log", free_port()
    command = [sys.executable, "-m", "lethe", "mcp", "--db", str(db), *FLAGS]
    command += ["--transport", "streamable-http", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("w") as errlog:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=errlog, stderr=errlog)
    try:
        wait_for(port, process, log)

        async def main() -> None:
            async with (
                streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write),
                ClientSession(read, write) as session,
            ):
                info = await session.initialize()
                assert info.server_info.name == "lethe"
                assert {tool.name for tool in (await session.list_tools()).tools} == TOOLS
                made = await call(session, "remember", text="the staging server moved to port 8443")
                assert made["key"] == 0
                hits = await call(session, "recall", query="staging server port")
                assert [(h["key"], h["access_count"]) for h in hits] == [(0, 1)]
                assert "k" in await error(session, "top", k=0)
                assert (await call(session, "stats"))["size"] == 1

        run(main)
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert read_back(db).peek(0).access_count == 1


# -- in this process: the public function, on a manual clock -----------------------


def test_server_over_a_shared_memory_decays_expires_and_evicts() -> None:
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=timezone.utc))
    store = InMemoryStore()
    shared: Shared[Any, str] = Shared(
        store, "agent", Memory(max_entries=3, half_life=timedelta(hours=1), clock_fn=clock)
    )

    async def main() -> None:
        async with Client(server(shared, name="agent-memory")) as client:
            await call(client, "remember", text="user prefers short answers", key="style")
            await call(client, "remember", text="user is called Ada", key="name", pinned=True)
            await call(client, "remember", text="today's build is green", key="build", ttl=600)
            clock.advance(timedelta(hours=1))
            top = {h["key"]: h["score"] for h in await call(client, "top")}
            assert top == {"name": 1.0, "style": 0.5}  # one half-life later; the build note expired
            assert await call(client, "search", query="build green") == []
            made = await call(client, "remember", text="user works in Berlin", key="city")
            assert made["evicted"] == [{"key": "build", "text": "today's build is green"}]  # reported by the next write
            made = await call(client, "remember", text="user likes tea", key="tea")
            assert made["evicted"] == [{"key": "style", "text": "user prefers short answers"}]  # full: the weakest
            stats = await call(client, "stats")
            assert (stats["size"], stats["capacity"], stats["name"]) == (3, 3, "agent")

    run(main)
    # Another replica of the store sees what the server committed.
    other: Shared[Any, str] = Shared(store, "agent", Memory(max_entries=3, half_life=timedelta(hours=1)))
    assert sorted(other.current().keys()) == ["city", "name", "tea"]


def test_a_key_spelled_with_leading_zeros_is_a_key_of_its_own() -> None:
    # "7" also names the generated key 7 (a model may give either spelling); "007" does not.
    shared: Shared[Any, str] = Shared(InMemoryStore(), "notes", Memory(max_entries=100))

    async def main() -> None:
        async with Client(server(shared)) as client:
            for i in range(8):
                await call(client, "remember", text=f"fact number {i}")  # the generated keys 0 to 7
            made = await call(client, "remember", text="James Bond's codename", key="007")
            assert (made["key"], made["replaced"]) == ("007", False)
            assert "0001" in await error(client, "forget", key="0001")
            assert (await call(client, "forget", key="7"))["key"] == 7
            # Any int key, past 2**64 too (JSON clients often send such numbers as text).
            await call(client, "remember", text="a long key", key=2**64)
            assert (await call(client, "forget", key=str(2**64)))["key"] == 2**64

    run(main)
    mem = shared.current()
    assert (mem.peek("007").value, mem.peek(1).value) == ("James Bond's codename", "fact number 1")
    assert 7 not in mem


# -- the command line ------------------------------------------------------------


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The one line ``lethe mcp ARGS`` reports its error in (exit status 2, nothing served)."""
    assert main(["mcp", *args]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("lethe mcp: error: ")
    return err


def test_a_stored_memory_keeps_its_configuration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "m.db"
    with SQLiteStore(db) as store:
        Shared(store, "memory", template()).update(lambda m: m.put("kept", key="k"))
    for flags, named in (
        (("--capacity", "50"), "--capacity 50"),
        (("--model", "actr"), "--model"),
        (("--half-life", "2h"), "--half-life"),
    ):
        err = refused(capsys, "--db", str(db), *flags)
        assert err.startswith(f"lethe mcp: error: {named}")
        assert "stored configuration" in err
    # Flags that agree with it (or none) serve it: the server stops when its stdin closes.
    done = subprocess.run(
        [sys.executable, "-m", "lethe", "mcp", "--db", str(db), "--capacity", "200", "--half-life", "60m"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert read_back(db).peek("k").value == "kept"


def test_command_line_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a store")
    assert "not a lethe store" in refused(capsys, "--db", str(text))
    new = str(tmp_path / "new" / "m.db")
    for flags, named in (
        (("--capacity", "0"), "--capacity"),
        (("--model", "nope"), "--model"),
        (("--half-life", "soon"), "--half-life"),
        (("--port", "70000"), "--port"),
    ):
        assert named in refused(capsys, "--db", new, *flags)
    assert not (tmp_path / "new").exists()  # bad flags are refused before anything is created
    with pytest.raises(SystemExit):
        main(["mcp"])
    assert "--db" in capsys.readouterr().err  # required


def test_the_core_and_the_command_line_import_no_mcp(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "import lethe, lethe.store, lethe._cli, lethe.integrations\n"
        "assert not any(m == 'mcp' or m.startswith('mcp.') for m in sys.modules), 'mcp imported'\n"
        "sys.modules['mcp'] = None  # as if not installed\n"
        f"sys.exit(lethe._cli.main(['mcp', '--db', {str(tmp_path / 'm.db')!r}]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert "pip install 'lethe-decay[mcp]'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://app:s3cret@db.example:5432/agents",  # SQLAlchemy's spelling
        "sqlite:///agents/m.db",
        "REDIS://:s3cret@cache:6379/0",
    ],
)
def test_a_url_of_another_scheme_is_refused_not_taken_for_a_path(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    err = refused(capsys, "--db", url)
    assert "not a store URL (one starts with redis://, rediss://, unix://, postgresql://, postgres://)" in err
    assert "s3cret" not in err
    assert list(tmp_path.iterdir()) == []  # no directories named after the URL


def test_a_generated_key_is_never_the_spelling_of_a_key_given_as_text() -> None:
    # "1" given for a ticket, then memories without a key: none is made under 1, which "1" would
    # also name, so a second forget("1") (a retry) removes nothing else.
    shared: Shared[Any, str] = Shared(InMemoryStore(), "notes", Memory(max_entries=100))

    async def main() -> None:
        async with Client(server(shared)) as client:
            await call(client, "remember", text="Ticket 1 is about login", key="1")
            made = [(await call(client, "remember", text=f"fact {i}"))["key"] for i in range(3)]
            assert made == [0, 2, 3]
            assert (await call(client, "forget", key="1"))["text"] == "Ticket 1 is about login"
            assert "no memory has the key" in await error(client, "forget", key="1")

    run(main)
    assert sorted(shared.current().keys()) == [0, 2, 3]


def test_timeout_is_for_a_store_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "--timeout" in refused(capsys, "--db", str(tmp_path / "m.db"), "--timeout", "5s")  # a file: no server
    assert "--timeout" in refused(capsys, "--db", "redis://127.0.0.1:1/0", "--timeout", "soon")
    assert not (tmp_path / "m.db").exists()
    # Nothing listens on port 1: refused once the timeout has passed, not the store's default 30 s.
    assert "--db" in refused(capsys, "--db", "redis://127.0.0.1:1/0", "--timeout", "1s")


def test_a_port_in_use_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        err = refused(capsys, "--db", str(tmp_path / "m.db"), "--transport", "streamable-http", "--port", str(port))
    assert err.startswith(f"lethe mcp: error: --port: cannot listen on 127.0.0.1:{port}")


def test_no_hits_is_an_empty_list_in_text_too() -> None:
    # A client that reads only text tells "no hits" from no answer.
    shared: Shared[Any, str] = Shared(InMemoryStore(), "notes", Memory(max_entries=100))

    async def main() -> None:
        async with Client(server(shared)) as client:
            for tool, arguments in (("search", {"query": "tea"}), ("recall", {"query": "tea"}), ("top", {})):
                result = await client.call_tool(tool, arguments)
                assert [(c.type, getattr(c, "text", None)) for c in result.content] == [("text", "[]")]
                assert result.structured_content == {"result": []}
            await call(client, "remember", text="Ada likes green tea")
            found = await client.call_tool("search", {"query": "tea"})
            assert [json.loads(getattr(c, "text", ""))["key"] for c in found.content] == [0]  # a block per hit

    run(main)


def test_tool_descriptions_are_plain_paragraphs() -> None:
    # A model reads the description as it is sent: no source indentation, no line broken mid-sentence.
    shared: Shared[Any, str] = Shared(InMemoryStore(), "notes", Memory(max_entries=100))

    async def main() -> None:
        async with Client(server(shared)) as client:
            tools = (await client.list_tools()).tools
            assert {tool.name for tool in tools} == TOOLS
            for tool in tools:
                description = tool.description or ""
                paragraphs = description.split("\n\n")
                assert all(p and "\n" not in p and p == " ".join(p.split()) for p in paragraphs), description
            remember = next(tool for tool in tools if tool.name == "remember")
            assert remember.description == (
                "Save one fact, preference or decision to long-term memory; returns its key.\n\n"
                "Memories fade unless recalled; give important ones a higher importance, pin standing rules, "
                "and give temporary facts a ttl (seconds). A key replaces the memory under it."
            )

    run(main)


def test_a_memory_dropped_behind_the_server_is_made_afresh(tmp_path: Path) -> None:
    # Another client drops the memory (or a Redis restarts without persistence): the server
    # goes on with it empty, as configured, instead of failing every call until restarted.
    evicted: list[Any] = []
    engine = SQLiteStore(tmp_path / "m.db")
    shared: Shared[Any, str] = Shared(
        engine, "notes", Memory(max_entries=2, on_evict=evicted.append, half_life=timedelta(hours=3))
    )
    other = SQLiteStore(tmp_path / "m.db")

    async def main() -> None:
        async with Client(server(shared)) as client:
            await call(client, "remember", text="Ada likes green tea", key="tea")
            assert other.drop("notes")
            assert await call(client, "search", query="tea") == []
            assert (await call(client, "stats"))["size"] == 0
            await call(client, "remember", text="Ada has a cat", key="cat")
            assert other.drop("notes")
            await call(client, "remember", text="Ada rides a bike", key="bike")  # a write first, this time
            await call(client, "remember", text="Ada reads Le Guin", key="books")
            await call(client, "remember", text="Ada plays go", key="go")  # the third: one is evicted
            stats = await call(client, "stats")
            assert (stats["size"], stats["capacity"], stats["half_life_seconds"]) == (2, 2, 3 * 3600.0)
            assert [e.key for gone in evicted for e in gone] == ["bike"]  # the template's hook, kept
            forgotten = await call(client, "forget", key="go")
            assert forgotten["key"] == "go"

    run(main)
    stored = Shared(other, "notes", Memory(max_entries=2, half_life=timedelta(hours=3))).current()
    assert sorted(stored.keys()) == ["books"]
    other.close()
    engine.close()


def test_a_dropped_memory_comes_back_as_last_configured_for_every_concurrent_call(tmp_path: Path) -> None:
    engine = SQLiteStore(tmp_path / "m.db")
    shared: Shared[Any, str] = Shared(engine, "notes", Memory(max_entries=3), checkpoint_every=5)
    other = SQLiteStore(tmp_path / "m.db")
    Shared(other, "notes", Memory(max_entries=3)).configure(max_entries=50)
    app = server(shared)

    async def main() -> None:
        async with Client(app) as client:
            assert (await call(client, "stats"))["capacity"] == 50  # (read before any drop)
            assert other.drop("notes")
            assert (await call(client, "stats"))["capacity"] == 50
            assert other.drop("notes")
            results = await asyncio.gather(*(client.call_tool("remember", {"text": f"fact {i}"}) for i in range(8)))
            assert not any(result.is_error for result in results)
            assert (await call(client, "stats"))["size"] == 8

    run(main)
    other.close()
    engine.close()


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--capacity", str(2**63)], "--capacity"),
        (["--model", "adaptive", "--half-life", "0.001"], "--half-life"),
        (["--model", "nope"], "--model"),
        (["--name", "a\x00b"], "--name"),
        (["--name", "\udcff"], "--name"),
        (["--transport", "streamable-http", "--host", "256.1.1.1"], "--host"),
    ],
)
def test_a_bad_flag_is_refused_before_the_store_is_created(
    flags: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "sub" / "m.db"
    assert refused(capsys, "--db", str(db), *flags).startswith(f"lethe mcp: error: {named}")
    assert not (tmp_path / "sub").exists()


def test_a_port_in_use_leaves_an_existing_store_as_it_was(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "m.db"
    Shared(SQLiteStore(db), "kept", Memory()).update(lambda m: m.put("v", key="k"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        refused(capsys, "--db", str(db), "--name", "typo", "--transport", "streamable-http", "--port", port)
    with SQLiteStore(db) as store:
        assert store.names() == ["kept"]  # no memory "typo" made before the port was found taken


def test_a_key_an_answer_cannot_carry_is_refused_and_nothing_is_written() -> None:
    shared: Shared[Any, str] = Shared(InMemoryStore(), "notes", Memory(max_entries=100))

    async def main() -> None:
        async with Client(server(shared)) as client:
            assert "key" in await error(client, "remember", text="tea is black", key="\udfff")
            assert "key" in await error(client, "forget", key="\udfff")

    run(main)
    assert (shared.version, len(shared.current())) == (0, 0)


def test_text_other_code_wrote_that_json_cannot_hold_is_shown_escaped() -> None:
    # (os.fsdecode gives such text: one entry of it stopped top, search and recall)
    shared: Shared[Any, Any] = Shared(InMemoryStore(), "notes", Memory(max_entries=100))
    shared.update(lambda m: m.put("report saved as r\udcff.txt", key="r\udcff").put("tea is black", key="t"))

    async def main() -> None:
        async with Client(server(shared)) as client:
            top = await call(client, "top")
            assert {(hit["key"], hit["text"]) for hit in top} == {
                ("r\\udcff", "report saved as r\\udcff.txt"),
                ("t", "tea is black"),
            }
            assert [hit["text"] for hit in await call(client, "search", query="report")] == [
                "report saved as r\\udcff.txt"
            ]
            assert len(await call(client, "recall", query="report saved")) == 1
            assert (await call(client, "stats"))["size"] == 2

    run(main)


def test_an_argument_a_tool_does_not_take_is_refused_and_nothing_is_written() -> None:
    shared: Shared[Any, str] = Shared(InMemoryStore(), "notes", Memory(max_entries=100))

    async def main() -> None:
        async with Client(server(shared)) as client:
            said = await error(client, "remember", text="ok", importanc=5, ttl_seconds=60)
            assert "unknown argument 'importanc'" in said
            assert "ttl" in said  # (what it takes, named)
            assert "unknown argument 'x'" in await error(client, "stats", x=1)
            for tool in (await client.list_tools()).tools:
                assert tool.input_schema["additionalProperties"] is False

    run(main)
    assert shared.version == 0


def test_a_negative_key_given_as_text_names_the_int_key() -> None:
    shared: Shared[Any, str] = Shared(InMemoryStore(), "notes", Memory(max_entries=100))

    async def main() -> None:
        async with Client(server(shared)) as client:
            await call(client, "remember", text="below zero", key=-5)
            assert (await call(client, "remember", text="replaced", key="-5"))["replaced"] is True
            assert (await call(client, "forget", key="-5"))["text"] == "replaced"

    run(main)
    assert len(shared.current()) == 0


def test_an_int_too_long_to_print_is_named_as_the_argument() -> None:
    shared: Shared[Any, str] = Shared(InMemoryStore(), "notes", Memory(max_entries=100))

    async def main() -> None:
        async with Client(server(shared)) as client:
            assert (await error(client, "top", k=10**5000)).startswith("top: k:")

    run(main)
