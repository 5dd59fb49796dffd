"""An engine on Redis or Valkey: many named memories, shared by processes on many hosts.

Needs the ``redis`` extra (redis-py): ``pip install 'lethe-decay[redis]'``.  Plain
Redis >= 6.2 or Valkey, no modules: each operation is one small Lua script,
atomic on the server, over the keys of one memory, which share one hash tag
(so a memory lives on one node of a Redis Cluster).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from typing import Any

from lethe.store._errors import StoreError

try:
    import redis
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("RedisStore needs redis-py: pip install 'lethe-decay[redis]'") from exc

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
# race: nothing written) or -1 (no such memory).
_APPEND = """
local latest = tonumber(redis.call('GET', KEYS[2]))
if not latest then return -1 end
local version = tonumber(ARGV[1])
if latest ~= version - 1 then
    if latest >= version and redis.call('HGET', KEYS[5], ARGV[1]) == ARGV[4] then return 1 end
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

#: Log records fetched per round trip by :meth:`RedisStore.read`.
_PAGE = 1000


class RedisStore:
    """A :class:`~lethe.store.Store` in Redis or Valkey: many named memories, many hosts.

    Each memory is a handful of keys under one hash tag (``prefix:{name}:...``):
    its configuration, latest version and head, the current entries (a hash
    by put order), the log (a hash by version), and checkpoints.  Every
    operation is one Lua script, atomic on the server.  A commit checks the
    latest version and writes only at the next one (the compare-and-swap),
    and carries an operation id: if the reply to a commit is lost and the
    client sends it again, the server recognises its own commit and answers
    yes instead of applying it twice or reporting a lost race.

    Durability is the server's: with AOF ``appendfsync always`` a commit
    that returned survives a server crash; with ``everysec`` (Redis's
    default when AOF is on) up to about a second of commits may be lost; with
    no persistence, a restart loses the memory.

    Args:
        url: A Redis URL (``"redis://host:6379/0"``), or a ``redis.Redis`` client.
        prefix: The first part of every key, to keep several stores in one database.
        timeout: Seconds to wait to connect and for each reply.

    Raises:
        StoreError: the server cannot be reached.
    """

    def __init__(self, url: str | redis.Redis, *, prefix: str = "lethe", timeout: float = 30.0) -> None:
        if isinstance(url, str):
            self._client: redis.Redis = redis.Redis.from_url(
                url, socket_timeout=timeout, socket_connect_timeout=timeout
            )
        else:
            self._client = url
        self.prefix = prefix
        self.timeout = timeout
        self._names = f"{prefix}:names"
        self._scripts = {
            name: self._client.register_script(source)
            for name, source in (
                ("open", _OPEN),
                ("append", _APPEND),
                ("load", _LOAD),
                ("checkpoint", _CHECKPOINT),
                ("compact", _COMPACT),
            )
        }
        self._run(self._client.ping)

    def _keys(self, name: str) -> list[str]:
        tag = f"{self.prefix}:{{{name.encode().hex()}}}"
        return [f"{tag}:{key}" for key in _KEYS]

    def _run(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
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
        keys = self._keys(name)
        latest = self._run(self._client.get, keys[1])
        if latest is None:
            raise KeyError(name)
        high = int(latest) if upto is None else min(upto, int(latest))
        out: list[tuple[int, str]] = []
        for start in range(after + 1, high + 1, _PAGE):
            versions = list(range(start, min(start + _PAGE, high + 1)))
            records = self._run(self._client.hmget, keys[3], versions)
            out += [(v, self._text(r)) for v, r in zip(versions, records) if r is not None]
        return out

    def append(
        self,
        name: str,
        version: int,
        record: str,
        head: str,
        written: Sequence[tuple[int, str]],
        removed: Sequence[int],
    ) -> bool:
        """See :meth:`lethe.store.Store.append`."""
        operation = secrets.token_hex(8)
        pairs = [part for seq, row in written for part in (seq, row)]
        done = self._script("append", name, version, record, head, operation, len(removed), *removed, *pairs)
        if done == -1:
            raise KeyError(name)
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
        """See :meth:`lethe.store.Store.compact`."""
        done = self._script("compact", name, min_gap)
        if done == -1:
            raise KeyError(name)
        return bool(done)
