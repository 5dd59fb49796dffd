"""An engine on Redis or Valkey: many named memories, shared by processes on many hosts.

Needs the ``redis`` extra (redis-py): ``pip install 'lethe-decay[redis]'``.  Plain
Redis >= 6.2 or Valkey, no modules: each operation is one small Lua script,
atomic on the server, over the keys of one memory, which share one hash tag
(so a memory lives on one node of a Redis Cluster).
"""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from lethe.store._engine import checked_timeout
from lethe.store._errors import CommitUnknown, StoreError

# Without the extra the class still imports (``from lethe.store import *`` works); building one
# says what to install.
_MISSING: str | None = None
try:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry
except ImportError:
    _MISSING = "RedisStore needs redis-py: pip install 'lethe-decay[redis]'"

T = TypeVar("T")

# Connection errors that trying again does not mend (not every redis-py has AuthorizationError).
_REFUSED: tuple[type[Exception], ...] = (
    ()
    if _MISSING
    else tuple(
        getattr(redis.exceptions, n)
        for n in ("AuthenticationError", "AuthorizationError")
        if hasattr(redis.exceptions, n)
    )
)

# The keys of one memory, in the order every script takes them.
_KEYS = ("config", "latest", "head", "log", "ops", "entries", "checkpoints", "first", "feed")

# KEYS: the memory's keys (_KEYS order). ARGV: config, head, then seq, row pairs.
_OPEN = """
local config = redis.call('GET', KEYS[1])
if config then return config end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], 0)
redis.call('SET', KEYS[3], ARGV[2])
redis.call('SET', KEYS[8], 1)
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[6], ARGV[i], ARGV[i + 1]) end
if #ARGV > 2 then redis.call('COPY', KEYS[6], KEYS[7] .. ':0:entries') end
redis.call('SET', KEYS[7] .. ':0:head', ARGV[2])
redis.call('ZADD', KEYS[7], 0, 0)
return ARGV[1]
"""

# ARGV: version, record, head, operation id, number removed, removed seqs..., seq, row pairs.
# Returns 1 (committed now, or by this same operation before its reply was lost), 0 (lost the
# race: nothing written), 2 (the version is taken and compacted away with its operation id:
# whether it is this operation's cannot be told) or -1 (no such memory).  An operation writes
# only at latest + 1, so once its version is taken it never writes: sent again, it is idempotent.
_APPEND = """
local latest = tonumber(redis.call('GET', KEYS[2]))
if not latest then return -1 end
local version = tonumber(ARGV[1])
if latest ~= version - 1 then
    if latest < version then return 0 end
    local op = redis.call('HGET', KEYS[5], ARGV[1])
    if op == ARGV[4] then return 1 end
    if not op then return 2 end
    return 0
end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SET', KEYS[3], ARGV[3])
redis.call('HSET', KEYS[4], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[5], ARGV[1], ARGV[4])
local removed = tonumber(ARGV[5])
for i = 6, 5 + removed do redis.call('HDEL', KEYS[6], ARGV[i]) end
for i = 6 + removed, #ARGV, 2 do redis.call('HSET', KEYS[6], ARGV[i], ARGV[i + 1]) end
redis.call('XADD', KEYS[9], 'MAXLEN', '~', 64, '*', 'v', ARGV[1])
return 1
"""

# Returns {version, head, rows...} of the current state, or nil.
_LOAD = """
local latest = redis.call('GET', KEYS[2])
if not latest then return nil end
local out = {latest, redis.call('GET', KEYS[3])}
for _, row in ipairs(redis.call('HVALS', KEYS[6])) do out[#out + 1] = row end
return out
"""

# ARGV: after, upto (-1: the latest). Returns {version, record, ...} of the log after ``after``, up
# to ``upto``, read at one instant (a compaction between reading the latest version and the records
# would leave a reader with none: taken for a store whose history went back), or nil.
_READ = """
local latest = redis.call('GET', KEYS[2])
if not latest then return nil end
local high = tonumber(latest)
local upto = tonumber(ARGV[2])
if upto >= 0 and upto < high then high = upto end
local out = {}
local v = tonumber(ARGV[1]) + 1
while v <= high do
  local last = math.min(v + 999, high)
  local versions = {}
  for i = v, last do versions[#versions + 1] = i end
  local records = redis.call('HMGET', KEYS[4], unpack(versions))
  for i = 1, #versions do
    if records[i] then
      out[#out + 1] = versions[i]
      out[#out + 1] = records[i]
    end
  end
  v = last + 1
end
return out
"""

# ARGV: at_most. Returns {version, head, rows...} of the newest checkpoint at or before it, or nil.
_CHECKPOINT = """
local found = redis.call('ZREVRANGEBYSCORE', KEYS[7], ARGV[1], '-inf', 'LIMIT', 0, 1)
if #found == 0 then return nil end
local v = found[1]
local out = {v, redis.call('GET', KEYS[7] .. ':' .. v .. ':head')}
for _, row in ipairs(redis.call('HVALS', KEYS[7] .. ':' .. v .. ':entries')) do out[#out + 1] = row end
return out
"""

# ARGV: min_gap. Returns 1 if a checkpoint was made, 0 if not, -1 (no such memory).
_COMPACT = """
local latest = tonumber(redis.call('GET', KEYS[2]))
if not latest then return -1 end
local newest = tonumber(redis.call('ZREVRANGE', KEYS[7], 0, 0)[1])
if latest - newest < tonumber(ARGV[1]) then return 0 end
local at = KEYS[7] .. ':' .. latest
redis.call('DEL', at .. ':entries')
if redis.call('EXISTS', KEYS[6]) == 1 then redis.call('COPY', KEYS[6], at .. ':entries') end
redis.call('SET', at .. ':head', redis.call('GET', KEYS[3]))
redis.call('ZADD', KEYS[7], latest, latest)
for _, old in ipairs(redis.call('ZRANGEBYSCORE', KEYS[7], '-inf', '(' .. newest)) do
    redis.call('DEL', KEYS[7] .. ':' .. old .. ':entries', KEYS[7] .. ':' .. old .. ':head')
    redis.call('ZREM', KEYS[7], old)
end
local first = tonumber(redis.call('GET', KEYS[8]))
for v = first, newest do
    redis.call('HDEL', KEYS[4], v)
    redis.call('HDEL', KEYS[5], v)
end
if newest + 1 > first then redis.call('SET', KEYS[8], newest + 1) end
return 1
"""

#: The longest pause between two tries to reach the server, in seconds.
_MAX_PAUSE = 0.5


def _may_resend(client: Any) -> bool:
    """Whether ``client`` may send a command again by itself when its reply is lost (True
    when that cannot be told)."""
    get = getattr(client, "get_connection_kwargs", None)
    if not callable(get):
        return True
    settings = get()
    retry = settings.get("retry")
    if retry is None:  # redis-py's connections then retry only if asked to retry on errors
        return bool(settings.get("retry_on_error") or settings.get("retry_on_timeout"))
    return bool(retry.get_retries() != 0)


class RedisStore:
    """A :class:`~lethe.store.Store` in Redis or Valkey: many named memories, many hosts.

    Each memory is a handful of keys under one hash tag (``prefix:{name}:...``):
    its configuration, latest version and head, the current entries (a hash
    by put order), the log (a hash by version), and checkpoints.  Every
    operation is one Lua script, atomic on the server.  A commit checks the
    latest version and writes only at the next one (the compare-and-swap),
    and carries an operation id, kept beside the log record.

    Lost replies: when the connection fails, every method reconnects and
    tries again, for up to ``timeout`` seconds.  A commit is sent again with
    the same operation id: the server recognises its own commit and answers
    yes, so it is never applied twice, and never reported as a lost race.
    If the server stays unreachable, :meth:`append` raises
    :class:`~lethe.store.CommitUnknown` and the other methods
    :class:`~lethe.store.StoreError`.  Compaction deletes the operation ids
    with the log: a commit sent again only after its version was compacted
    away (two compactions meanwhile, so at least a checkpoint interval of
    commits by others) cannot be told apart from another writer's, and
    raises :class:`~lethe.store.CommitUnknown` rather than guess.

    The client built from a URL does not retry by itself (``retry`` with no
    retries): this store's own loop does, and so knows whether a commit may
    have reached the server more than once.  A client you pass keeps its
    own settings (one made as ``redis.Redis(host, port)`` sends a command
    again up to ten times by itself; one made by ``from_url`` does not); the
    answer is true either way.

    Durability is the server's: with AOF ``appendfsync always`` a commit
    that returned survives a server crash; with ``everysec`` (Redis's
    default when AOF is on) the last commits may be lost to a crash of the
    server (rarely: see ``docs/store.md``), up to about a second of them to
    a crash of the machine; with no persistence, a restart loses the memory.
    After a restart the same store object reconnects by itself.

    Args:
        url: A Redis URL (``"redis://host:6379/0"``), or a ``redis.Redis`` client.
        prefix: The first part of every key, to keep several stores in one database.
        timeout: Seconds to wait to connect and for each reply, and to keep
            trying to reach the server after a connection failed.

    Raises:
        StoreError: the server cannot be reached.
    """

    def __init__(self, url: str | redis.Redis, *, prefix: str = "lethe", timeout: float = 30.0) -> None:
        if _MISSING:
            raise ImportError(_MISSING)
        timeout = checked_timeout(timeout)
        if isinstance(url, str):
            self._client: redis.Redis = redis.Redis.from_url(
                url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0)
            )
        else:
            self._client = url
        self.prefix = prefix
        self.timeout = timeout
        self._resends = _may_resend(self._client)
        self._names = f"{prefix}:names"
        self._scripts = {
            name: self._client.register_script(source)
            for name, source in (
                ("open", _OPEN),
                ("append", _APPEND),
                ("load", _LOAD),
                ("read", _READ),
                ("checkpoint", _CHECKPOINT),
                ("compact", _COMPACT),
            )
        }
        self._run(self._client.ping)

    def _keys(self, name: str) -> list[str]:
        tag = f"{self.prefix}:{{{name.encode().hex()}}}"
        return [f"{tag}:{key}" for key in _KEYS]

    def _retrying(self, call: Callable[[], T]) -> T:
        """``call()``, called again while the connection fails, for up to ``timeout`` seconds
        after the first failure; then the last ``ConnectionError`` or ``TimeoutError`` is raised."""
        deadline: float | None = None
        pause = 0.0
        while True:
            try:
                return call()
            except _REFUSED:
                raise
            except (redis.ConnectionError, redis.TimeoutError):
                now = time.monotonic()
                if deadline is None:
                    deadline = now + self.timeout
                if now >= deadline:
                    raise
                # The first try again is at once (a pooled connection the server closed);
                # then a growing, jittered pause, so that many clients do not come back in step.
                time.sleep(min(pause * random.uniform(0.5, 1.0), deadline - now))
                pause = min(max(2 * pause, 0.01), _MAX_PAUSE)

    def _run(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._retrying(lambda: call(*args, **kwargs))
        except redis.ConnectionError as exc:
            raise StoreError(f"cannot reach Redis: {exc}") from None
        except redis.TimeoutError as exc:
            raise StoreError(f"Redis did not answer within {self.timeout} s: {exc}") from None

    def _script(self, script: str, name: str, *args: Any) -> Any:
        return self._run(self._scripts[script], keys=self._keys(name), args=list(args))

    @staticmethod
    def _text(value: bytes | str) -> str:
        return value.decode() if isinstance(value, bytes) else value

    def close(self) -> None:
        """Close the client's connections; the store is not used again."""
        self._client.close()

    def __enter__(self) -> RedisStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RedisStore(prefix={self.prefix!r})"  # the URL may hold a password

    # -- the engine -------------------------------------------------------

    def names(self) -> list[str]:
        """See :meth:`lethe.store.Store.names`."""
        return sorted(self._text(n) for n in self._run(self._client.smembers, self._names))

    def config(self, name: str) -> str:
        """See :meth:`lethe.store.Store.config`."""
        found = self._run(self._client.get, self._keys(name)[0])
        if found is None:
            raise KeyError(name)
        return self._text(found)

    def open(self, name: str, config: str, head: str, rows: Sequence[tuple[int, str]]) -> str:
        """See :meth:`lethe.store.Store.open`."""
        pairs = [part for seq, row in rows for part in (seq, row)]
        stored = self._text(self._script("open", name, config, head, *pairs))
        self._run(self._client.sadd, self._names, name)
        return stored

    def load(self, name: str) -> tuple[int, str, list[str]]:
        """See :meth:`lethe.store.Store.load`."""
        found = self._script("load", name)
        if found is None:
            raise KeyError(name)
        return int(found[0]), self._text(found[1]), [self._text(r) for r in found[2:]]

    def read(self, name: str, after: int, upto: int | None = None) -> Sequence[tuple[int, str]]:
        """See :meth:`lethe.store.Store.read`."""
        found = self._script("read", name, after, -1 if upto is None else upto)
        if found is None:
            raise KeyError(name)
        return [(int(found[i]), self._text(found[i + 1])) for i in range(0, len(found), 2)]

    def append(
        self,
        name: str,
        version: int,
        record: str,
        head: str,
        written: Sequence[tuple[int, str]],
        removed: Sequence[int],
    ) -> bool:
        """See :meth:`lethe.store.Store.append`; the class docstring tells how a lost reply is resolved."""
        operation = secrets.token_hex(8)
        pairs = [part for seq, row in written for part in (seq, row)]
        keys, args = self._keys(name), [version, record, head, operation, len(removed), *removed, *pairs]
        sends = 0

        def send() -> Any:
            nonlocal sends
            sends += 1
            return self._scripts["append"](keys=keys, args=args)

        unknown = f"{name!r}: whether version {version} was committed is unknown"
        try:
            done = self._retrying(send)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise CommitUnknown(
                f"{unknown}: the connection to Redis failed while it was sent, and Redis could not be"
                f" reached again within {self.timeout} s ({exc})"
            ) from None
        if done == -1:
            raise KeyError(name)
        if done == 2:
            if sends == 1 and not self._resends:
                return False  # sent once and found taken: another writer's version
            raise CommitUnknown(
                f"{unknown}: its reply was lost, and by the time it was sent again the log"
                " was compacted past that version, with the operation ids that tell"
            )
        return bool(done)

    def wait(self, name: str, after: int, timeout: float) -> int:
        """See :meth:`lethe.store.Store.wait`.

        Every commit adds an item to the memory's stream (``...:feed``, the
        last 64 or so kept); this blocks on ``XREAD BLOCK`` from the newest item
        read together with the latest version, so no commit in between is missed.
        """
        keys = self._keys(name)
        deadline = time.monotonic() + timeout
        while True:
            pipe = self._client.pipeline(transaction=True)
            pipe.get(keys[1])
            pipe.xrevrange(keys[8], count=1)
            latest, newest = self._run(pipe.execute)
            if latest is None:
                raise KeyError(name)
            left = deadline - time.monotonic()
            if int(latest) != after or left <= 0:
                return int(latest)
            since = newest[0][0] if newest else "0-0"
            # Below the socket timeout, so a quiet stream is not taken for a dead server.
            block = max(1, int(min(left, self.timeout / 2) * 1000))
            self._run(self._client.xread, {keys[8]: since}, count=1, block=block)

    def time(self) -> float:
        """See :meth:`lethe.store.Store.time`: the server's clock (``TIME``)."""
        seconds, micros = self._run(self._client.time)
        return int(seconds) + int(micros) / 1e6

    def checkpoint(self, name: str, at_most: int | None = None) -> tuple[int, str, list[str]]:
        """See :meth:`lethe.store.Store.checkpoint`."""
        found = self._script("checkpoint", name, "+inf" if at_most is None else at_most)
        if found is None:
            raise KeyError(name if at_most is None else at_most)
        return int(found[0]), self._text(found[1]), [self._text(r) for r in found[2:]]

    def compact(self, name: str, min_gap: int) -> bool:
        """See :meth:`lethe.store.Store.compact`.  Sent again after a lost reply, a
        compaction that was made answers False (the checkpoint it made is recent)."""
        done = self._script("compact", name, min_gap)
        if done == -1:
            raise KeyError(name)
        return bool(done)
