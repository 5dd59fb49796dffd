"""``lethe inspect URL``: a memory in a Redis or PostgreSQL store, shown as from an SQLite file, never written."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lethe import ManualClock
from lethe._cli import main
from lethe._cli._inspect import ReadOnly, scrubbed, shown
from lethe.store import Shared, SQLiteStore, Store, StoreError

from ._servers import free_port
from .conftest import SERVER_ENGINES
from .test_cli import AT, T0
from .test_cli_store import fill, template

SECRET = "s3cret-Pa55"


@dataclass
class Server:
    """A store on a throwaway server: the URL ``inspect`` is given, the options it needs, a
    store object of the same memories, and everything the server holds for them."""

    url: str
    options: tuple[str, ...]
    store: Callable[[], Any]
    snapshot: Callable[[], object]


def _redis(url: str, prefix: str) -> Iterator[Server]:
    import redis

    from lethe.store import RedisStore

    client = redis.Redis.from_url(url)

    read: dict[Any, Callable[[Any], Any]] = {
        b"string": client.get,
        b"hash": client.hgetall,
        b"set": client.smembers,
        b"zset": lambda key: client.zrange(key, 0, -1, withscores=True),
        b"stream": client.xrange,
    }

    def snapshot() -> object:
        # Each key's content (DUMP is no snapshot: a read may move a hash along in its rehashing).
        return {key: read[client.type(key)](key) for key in sorted(client.scan_iter(f"{prefix}:*"))}

    yield Server(url, ("--prefix", prefix), lambda: RedisStore(url, prefix=prefix), snapshot)
    client.close()


def _postgres(dsn: str) -> Iterator[Server]:
    import psycopg

    from lethe.store import PostgresStore

    def snapshot() -> object:
        with psycopg.connect(dsn) as conn:
            tables = [
                row[0]
                for row in conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1"
                )
            ]
            return {t: sorted(map(repr, conn.execute(f"SELECT * FROM {t}").fetchall())) for t in tables}

    yield Server(dsn, (), lambda: PostgresStore(dsn), snapshot)


@pytest.fixture(params=SERVER_ENGINES)  # the engines lethe inspect reaches by URL: those on a server
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    """An empty store on the session's Redis (under a prefix of its own) or in a fresh PostgreSQL database."""
    if request.param == "redis":
        yield from _redis(request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix"))
    else:
        yield from _postgres(request.getfixturevalue("postgres_dsn"))


def write(store: Store) -> None:
    """'support-bot' (version 5) and 'billing' (version 1), as ``test_cli_store``'s SQLite file holds them."""
    clock = ManualClock(T0)
    fill(Shared(store, "support-bot", template(clock)), clock)
    Shared(store, "billing", template(clock)).update(lambda m: m.put("invoice 4471 paid", key="invoice"))


@pytest.fixture
def filled(server: Server) -> Server:
    """``server`` holding the memories :func:`write` writes."""
    with server.store() as store:
        write(store)
    return server


@pytest.fixture
def twin(tmp_path: Path) -> str:
    """An SQLite store file holding the same memories."""
    path = tmp_path / "agent-memory.db"
    with SQLiteStore(path) as store:
        write(store)
    return str(path)


def inspect(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``lethe inspect ARGS`` in this process: exit status, stdout and stderr."""
    status = main(["inspect", *args])
    out, err = capsys.readouterr()
    return status, out, err


def error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The one-line error of ``lethe inspect ARGS`` (exit status 2, nothing on stdout)."""
    status, out, err = inspect(capsys, *args)
    assert (status, out) == (2, ""), err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("lethe inspect: error: ")
    return err


def test_a_store_url_shows_what_the_sqlite_file_shows(
    filled: Server, twin: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for args in (("--name", "support-bot"), ("--name", "billing"), ("--name", "support-bot", "--sort", "age")):
        status, out, err = inspect(capsys, filled.url, *filled.options, *args, "--at", AT)
        assert (status, err) == (0, ""), err
        _, from_file, _ = inspect(capsys, twin, *args, "--at", AT)
        assert out.startswith(f"{filled.url}: {args[1]} @ version ")
        # The same text but for where the memory came from.
        assert out.removeprefix(filled.url) == from_file.removeprefix(twin)
        status, out, err = inspect(capsys, filled.url, *filled.options, *args, "--at", AT, "--json")
        assert (status, err) == (0, ""), err
        doc = json.loads(out)
        from_file_doc = json.loads(inspect(capsys, twin, *args, "--at", AT, "--json")[1])
        assert (doc.pop("file"), from_file_doc.pop("file")) == (filled.url, twin)
        assert doc == from_file_doc
    doc = json.loads(inspect(capsys, filled.url, *filled.options, "--name", "support-bot", "--at", AT, "--json")[1])
    assert (doc["name"], doc["version"], doc["size"]) == ("support-bot", 5, 4)
    assert {e["key"]: e["access_count"] for e in doc["entries"]}["deploy"] == 1


def test_a_missing_or_unknown_name_lists_the_names_held(filled: Server, capsys: pytest.CaptureFixture[str]) -> None:
    err = error(capsys, filled.url, *filled.options)
    assert "2 memories ('billing', 'support-bot')" in err
    assert "--name" in err
    err = error(capsys, filled.url, *filled.options, "--name", "nope")
    assert "no memory named 'nope'; the store holds 'billing', 'support-bot'" in err


def test_inspect_writes_nothing(filled: Server, capsys: pytest.CaptureFixture[str]) -> None:
    before = filled.snapshot()
    for args in (("--name", "support-bot"), ("--name", "billing", "--json"), ("--name", "nope"), ()):
        inspect(capsys, filled.url, *filled.options, "--at", AT, *args)
    assert filled.snapshot() == before
    with filled.store() as store:
        assert store.names() == ["billing", "support-bot"]
        assert [store.load(name)[0] for name in store.names()] == [1, 5]


def test_a_store_holding_one_memory_needs_no_name(server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    with server.store() as store:
        clock = ManualClock(T0)
        fill(Shared(store, "support-bot", template(clock)), clock)
    status, out, err = inspect(capsys, server.url, *server.options, "--at", AT)
    assert (status, err) == (0, ""), err
    assert out.startswith(f"{server.url}: support-bot @ version 5, 4/10 entries, ")


def test_a_redis_prefix_holding_nothing_says_so(
    redis_url: str, redis_prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = error(capsys, redis_url, "--prefix", redis_prefix)
    assert f"the store holds no memories under the key prefix {redis_prefix!r} (--prefix)" in err
    err = error(capsys, redis_url, "--prefix", redis_prefix, "--name", "support-bot")
    assert "no memory named 'support-bot'; the store holds none under the key prefix" in err


def test_redis_takes_its_default_prefix(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    import redis

    from lethe.store import RedisStore

    url = redis_url.rsplit("/", 1)[0] + "/9"  # a database of its own: no other test writes the default prefix
    client = redis.Redis.from_url(url)
    try:
        assert client.dbsize() == 0
        with RedisStore(url) as store:
            write(store)
        status, out, err = inspect(capsys, url, "--name", "billing", "--at", AT)
        assert (status, err) == (0, ""), err
        assert out.startswith(f"{url}: billing @ version 1, 1/10 entries, ")
    finally:
        client.flushdb()
        client.close()


def test_a_postgres_database_without_lethe_tables_is_left_without_them(
    postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    # PostgresStore creates its tables in a database that has none: inspect must not build one.
    assert "not a lethe store" in error(capsys, postgres_dsn, "--name", "support-bot")
    with psycopg.connect(postgres_dsn) as conn:
        assert conn.execute("SELECT to_regclass('lethe_meta')").fetchone() == (None,)
    from lethe.store import PostgresStore

    PostgresStore(postgres_dsn).close()  # the tables, and no memory
    assert "the store holds no memories" in error(capsys, postgres_dsn)


@pytest.fixture
def reader(filled: Server, request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of ``filled`` for an account that may only read (any write would be refused), with a password."""
    name = f"reader_{request.node.callspec.id}_{free_port()}"
    if filled.url.startswith("redis"):
        import redis

        prefix = filled.options[1]
        client = redis.Redis.from_url(filled.url)
        # Its keys' reads, and the scripts that read them (EVALSHA, and SCRIPT LOAD when the server lost them).
        commands = ["+@read", "+@connection", "+evalsha", "+script|load"]
        client.acl_setuser(name, enabled=True, passwords=[f"+{SECRET}"], keys=[f"{prefix}:*"], commands=commands)
        yield filled.url.replace("redis://", f"redis://{name}:{SECRET}@")
        client.acl_deluser(name)
        client.close()
    else:
        import psycopg

        with psycopg.connect(filled.url, autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {name} LOGIN PASSWORD '{SECRET}'")
            conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {name}")
        yield filled.url.replace("postgresql://lethe@", f"postgresql://{name}:{SECRET}@")
        with psycopg.connect(filled.url, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {name}")
            conn.execute(f"DROP ROLE {name}")


def test_an_account_that_may_only_read_is_enough(
    filled: Server, reader: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert SECRET in reader
    before = filled.snapshot()
    status, out, err = inspect(capsys, reader, *filled.options, "--name", "support-bot", "--at", AT)
    assert (status, err) == (0, ""), err
    # The password is never printed: the URL is shown with *** in its place.
    assert out.startswith(f"{shown(reader)}: support-bot @ version 5, ")
    assert ":***@" in out.splitlines()[0]
    status, out, err = inspect(capsys, reader, *filled.options, "--name", "billing", "--json")
    assert (status, err) == (0, ""), err
    assert json.loads(out)["file"] == shown(reader)
    assert SECRET not in out
    assert SECRET not in error(capsys, reader, *filled.options, "--name", "nope")
    assert filled.snapshot() == before


def test_an_unreachable_server_is_one_line_without_the_password(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("redis")
    pytest.importorskip("psycopg")
    port = free_port()
    for url, words in (
        (f"redis://reader:{SECRET}@127.0.0.1:{port}/0", "cannot reach Redis"),
        (f"postgresql://reader:{SECRET}@127.0.0.1:{port}/agents", "cannot connect to PostgreSQL"),
    ):
        start = time.monotonic()
        err = error(capsys, url, "--name", "support-bot", "--timeout", "0.3")
        assert time.monotonic() - start < 10
        assert words in err
        assert f"reader:***@127.0.0.1:{port}" in err
        assert SECRET not in err


def test_a_malformed_url_is_one_line_without_the_password(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("redis")
    pytest.importorskip("psycopg")
    for url, words in (
        (f"redis://reader:{SECRET}@127.0.0.1:notaport/0", "not a valid Redis URL"),
        (f"redis://reader:{SECRET}@127.0.0.1:6379/0?socket_timeout=soon", "not a valid Redis URL"),
        # libpq quotes the whole URL in this message.
        (f"postgresql://reader:{SECRET}@[::1/agents", "not a valid PostgreSQL URL"),
        (f"postgresql://127.0.0.1:1/agents?password={SECRET}&bogus=1", "not a valid PostgreSQL URL"),
    ):
        err = error(capsys, url)
        assert words in err
        assert SECRET not in err


EXTRA_MISSING = """
import sys
sys.modules[sys.argv[1]] = None  # as if the extra were not installed
from lethe._cli import main
sys.exit(main(["inspect", *sys.argv[2:]]))
"""


@pytest.mark.parametrize(
    ("module", "url", "extra"),
    [
        ("redis", f"redis://reader:{SECRET}@127.0.0.1:1/0", "redis"),
        ("psycopg", f"postgresql://reader:{SECRET}@127.0.0.1:1/agents", "postgres"),
    ],
)
def test_without_the_extra_the_error_says_what_to_install(module: str, url: str, extra: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", EXTRA_MISSING, module, url, "--name", "support-bot"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert f"pip install 'lethe-decay[{extra}]'" in done.stderr
    assert SECRET not in done.stderr


def test_options_for_a_server_with_a_file(twin: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert "--prefix" in error(capsys, twin, "--prefix", "lethe")
    assert "--timeout" in error(capsys, twin, "--timeout", "5s")
    assert "--prefix" in error(capsys, f"postgresql://reader:{SECRET}@127.0.0.1:1/agents", "--prefix", "lethe")
    assert "--timeout" in error(capsys, "redis://127.0.0.1:1/0", "--timeout", "soon")


def test_an_unknown_scheme_is_neither_a_file_nor_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = error(capsys, f"valkey://reader:{SECRET}@127.0.0.1:6379/0", "--name", "support-bot")
    assert "no such file, and not a store URL (one starts with redis://, rediss://, unix://" in err
    assert SECRET not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("url", "printed"),
    [
        ("redis://default:pw@cache:6379/0", "redis://default:***@cache:6379/0"),
        ("rediss://:pw@cache/0", "rediss://:***@cache/0"),
        ("redis://cache:6379/0", "redis://cache:6379/0"),
        ("redis://user@cache/0", "redis://user@cache/0"),
        ("redis://u:p@ss@cache/0", "redis://u:***@cache/0"),  # the last @ ends the user information
        ("postgresql://u:pa?ss@db/agents", "postgresql://u:***@db/agents"),  # libpq reads the password as pa?ss
        ("postgresql://db/agents?sslmode=require&password=pw", "postgresql://db/agents?sslmode=require&password=***"),
        ("postgres://db?sslpassword=pw&PassWord=pw2", "postgres://db?sslpassword=***&PassWord=***"),
        ("unix://:pw@/run/redis.sock?db=1", "unix://:***@/run/redis.sock?db=1"),
        ("agent-memory.db", "agent-memory.db"),
    ],
)
def test_a_url_is_printed_without_its_passwords(url: str, printed: str) -> None:
    assert shown(url) == printed
    message = f"cannot connect: {url}: bad\n\tretry"
    expected = f"cannot connect: {printed}: bad retry" if "://" in url else message
    assert scrubbed(message, url) == expected


class Hourly:
    """A custom decay function, known to the store by its declared name."""

    name = "tests.hourly"

    def __call__(self, entry: Any, now: Any) -> float:
        return 0.5


def test_a_memory_kept_with_a_custom_decay_function_is_shown_unscored(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    with server.store() as store:
        clock = ManualClock(T0)
        fill(Shared(store, "support-bot", template(clock, decay_fn=Hourly())), clock)
    before = server.snapshot()
    status, out, err = inspect(capsys, server.url, *server.options, "--at", AT, "--json")
    assert (status, err) == (0, ""), err
    doc = json.loads(out)
    assert doc["decay_fn"]["name"] == "custom"
    assert all(e["score"] is None for e in doc["entries"])
    status, out, err = inspect(capsys, server.url, *server.options, "--at", AT, "--json", "--model", "exponential")
    assert (status, err) == (0, ""), err
    assert {e["key"]: e["score"] for e in json.loads(out)["entries"]}["deploy"] == pytest.approx(0.5**1.5)
    assert server.snapshot() == before


def test_a_name_gone_before_it_is_read_is_not_created(tmp_path: Path) -> None:
    # inspect checks that the store holds the name, then reads it through ReadOnly: were the
    # name removed in between, Shared would create it afresh in a plain store.
    with SQLiteStore(tmp_path / "agent-memory.db") as store:
        with pytest.raises(StoreError, match="'support-bot' is not in the store any more: it is not created"):
            Shared(ReadOnly(store), "support-bot", template(ManualClock(T0)))
        assert store.names() == []
