"""An engine on Redis or Valkey: many named memories, shared by processes on many hosts.

Needs the ``redis`` extra (redis-py): ``pip install 'lethe-decay[redis]'``.  Plain
Redis >= 6.2 or Valkey, no modules: each operation is one small Lua script,
atomic on the server, over the keys of one memory, which share one hash tag
(so a memory lives on one node of a Redis Cluster).
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from lethe._core.validate import flag
from lethe.store._engine import checked_timeout, config_missing
from lethe.store._errors import CommitUnknown, MemoryGone, StoreError
from lethe.store._retry import Retry

# Without the extra the class still imports (``from lethe.store import *`` works); building one
# says what to install.
_MISSING: str | None = None
try:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry as ClientRetry
except ImportError:
    _MISSING = "RedisStore needs redis-py: pip install 'lethe-decay[redis]'"

T = TypeVar("T")

#: What redis-py raises (nothing when it is not installed): for callers that guard a raw client error.
CLIENT_ERRORS: tuple[type[Exception], ...] = () if _MISSING else (redis.RedisError,)

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

#: A put order as lethe writes an entries hash's field, and a comma-separated list of them (the
#: fields a script read, joined by the client to be checked at once).
_SEQ = re.compile("0|[1-9][0-9]{0,18}")
_SEQS = re.compile("(?:(?:0|[1-9][0-9]{0,18})(?:,(?:0|[1-9][0-9]{0,18}))*)?")

#: The last version a memory may have: the scripts read versions of at most 13 digits.
_MAX_VERSION = 10**13 - 1

#: How many log records one call of the read script returns at most (the caller calls again).
_READ_CHUNK = 1000
#: The most log records one compaction deletes is the larger of this and twice its ``min_gap``.
_TRIM = 1000
#: How many checkpoints one call of the drop script removes at most (the caller calls again).
_DROP_CHUNK = 1000

# What every script that reads a version number starts with.  lethe writes versions as whole
# numbers of at most 13 digits (exact in Lua's numbers, and written back by Lua as they were
# read); a key holding anything else is reported (an error reply starting with LETHE), so that no
# key's content can make a script loop for long.
_PRELUDE = """
local function shown(text)
  return '"' .. (string.gsub(string.sub(text, 1, 24), '[^%w%p ]', '?')) .. '"'
end
local function version(text, what)
  if type(text) ~= 'string' or #text > 13 or not string.match(text, '^%d+$') then
    local held = type(text) == 'string' and shown(text) or 'nothing'
    return nil, 'LETHE the ' .. what .. ' is ' .. held .. ', not a version number'
  end
  return tonumber(text), nil
end
-- The entries hash ``key`` into ``out[3]`` as HGETALL gives it: each field (a put order) then its
-- row.  Checked by the caller: a field matched here one by one, or a string built of them, costs
-- more than the rest of the read, and a client reads a reply of many strings at C speed (hiredis).
local function rows(out, key)
  out[3] = redis.call('HGETALL', key)
end
-- The latest version (nil: no such memory) and the first version the log holds, checked.
local function bounds()
  local held = redis.call('GET', KEYS[2])
  if not held then return nil, nil, nil end
  local latest, bad = version(held, 'latest version')
  if bad then return nil, nil, bad end
  local first
  first, bad = version(redis.call('GET', KEYS[8]), 'first retained version')
  if bad then return nil, nil, bad end
  if first < 1 or first > latest + 1 then
    return nil, nil, 'LETHE the first retained version is ' .. first .. ', not one from 1 to ' .. (latest + 1)
      .. ' (the latest version plus one)'
  end
  return latest, first, nil
end
"""

# KEYS: the memory's keys (_KEYS order). ARGV: config, head, 1 if the name is in the names set
# (else 0), then seq, row pairs.  Returns the stored configuration, or when it is missing while
# the memory is not, writes nothing (never a new memory over what is left) and returns 0: another
# of its keys is there (a damaged store, or a drop cut off or still under way); -1: none is, but
# the names set lists it (a drop that has not unlisted it yet, or every key deleted).
_OPEN = """
local config = redis.call('GET', KEYS[1])
if config then return config end
if redis.call('EXISTS', KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]) > 0 then return 0 end
if ARGV[3] == '1' then return -1 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], 0)
redis.call('SET', KEYS[3], ARGV[2])
redis.call('SET', KEYS[8], 1)
for i = 4, #ARGV, 2 do redis.call('HSET', KEYS[6], ARGV[i], ARGV[i + 1]) end
redis.call('DEL', KEYS[7] .. ':0:entries')
if #ARGV > 3 then redis.call('COPY', KEYS[6], KEYS[7] .. ':0:entries') end
redis.call('SET', KEYS[7] .. ':0:head', ARGV[2])
redis.call('ZADD', KEYS[7], 0, 0)
return ARGV[1]
"""

# ARGV: version, record, head, operation id, the new configuration (empty: unchanged), the head
# the commit was made on (empty: not checked), number removed, removed seqs..., seq, row pairs.
# Returns 1 (committed now, or by this same operation before its reply was lost), 0 (lost the
# race: nothing written), 2 (the version is taken and compacted away with its operation id:
# whether it is this operation's cannot be told) or -1 (no such memory).  An operation writes
# only at latest + 1, so once its version is taken it never writes: sent again, it is idempotent.
_APPEND = _PRELUDE + """
local held = redis.call('GET', KEYS[2])
if not held then return -1 end
local latest, bad = version(held, 'latest version')
if bad then return redis.error_reply(bad) end
local wanted = tonumber(ARGV[1])
if latest ~= wanted - 1 then
    if latest < wanted then return 0 end
    local op = redis.call('HGET', KEYS[5], ARGV[1])
    if op == ARGV[4] then return 1 end
    if not op then return 2 end
    return 0
end
if ARGV[6] ~= '' and redis.call('GET', KEYS[3]) ~= ARGV[6] then return 0 end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SET', KEYS[3], ARGV[3])
redis.call('HSET', KEYS[4], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[5], ARGV[1], ARGV[4])
if ARGV[5] ~= '' then redis.call('SET', KEYS[1], ARGV[5]) end
local removed = tonumber(ARGV[7])
for i = 8, 7 + removed do redis.call('HDEL', KEYS[6], ARGV[i]) end
for i = 8 + removed, #ARGV, 2 do redis.call('HSET', KEYS[6], ARGV[i], ARGV[i + 1]) end
redis.call('XADD', KEYS[9], 'MAXLEN', '~', 64, '*', 'v', ARGV[1])
return 1
"""

# Returns {version, head, {seq, row, seq, row, ...}} of the current state, or nil: RedisStore.load
# for an account that may not run MULTI (one that may only read and run scripts).
_LOAD = _PRELUDE + """
local held = redis.call('GET', KEYS[2])
if not held then return nil end
local latest, bad = version(held, 'latest version')
if bad then return redis.error_reply(bad) end
local head = redis.call('GET', KEYS[3])
if not head then return redis.error_reply('LETHE the head of version ' .. latest .. ' is missing') end
local out = {latest, head}
rows(out, KEYS[6])
return out
"""

# ARGV: after, upto (-1: the latest), most.  Returns nil (no such memory) or {latest, first,
# version, record, ...}: the latest version, the first version the log holds, then the records
# from after + 1 (from first, if later: compacted away before it) up to upto, at most ``most`` of
# them, all read at one instant.  A reader past ``most`` records calls again from the last version
# it got; when a compaction came in between, ``first`` is past that version, and the reader starts
# over from ``first`` (its rows start later than after + 1: a compaction, never a hole in the
# middle nor a history that went back).  A version missing from first to the latest is reported,
# never skipped.
_READ = _PRELUDE + """
local latest, first, bad = bounds()
if bad then return redis.error_reply(bad) end
if not latest then return nil end
local high = latest
local upto = tonumber(ARGV[2])
if upto >= 0 and upto < high then high = upto end
local v = math.max(tonumber(ARGV[1]) + 1, first)
local last = math.min(v + tonumber(ARGV[3]) - 1, high)
local out = {latest, first}
if v <= last then
  local versions = {}
  for i = v, last do versions[#versions + 1] = i end
  local records = redis.call('HMGET', KEYS[4], unpack(versions))
  for i = 1, #versions do
    if not records[i] then
      return redis.error_reply('LETHE the log has no record of version ' .. versions[i] .. ', below the latest ('
        .. latest .. '; it should hold every version from ' .. first .. ' on)')
    end
    out[#out + 1] = versions[i]
    out[#out + 1] = records[i]
  end
end
return out
"""

# ARGV: at_most. Returns {version, head, {seq, row, seq, row, ...}} of the newest checkpoint at or
# before it, {} if none is, or nil (no such memory).
_CHECKPOINT = _PRELUDE + """
local held = redis.call('GET', KEYS[2])
if not held then return nil end
local latest, bad = version(held, 'latest version')
if bad then return redis.error_reply(bad) end
local found = redis.call('ZREVRANGEBYSCORE', KEYS[7], ARGV[1], '-inf', 'LIMIT', 0, 1)
if #found == 0 then return {} end
local v
v, bad = version(found[1], 'checkpoint')
if bad then return redis.error_reply(bad) end
if v > latest then return redis.error_reply('LETHE checkpoint ' .. v .. ' is past the latest version ' .. latest) end
local head = redis.call('GET', KEYS[7] .. ':' .. found[1] .. ':head')
if not head then return redis.error_reply('LETHE the head of checkpoint ' .. v .. ' is missing') end
local out = {v, head}
rows(out, KEYS[7] .. ':' .. found[1] .. ':entries')
return out
"""

# ARGV: min_gap, most log records to delete.  Checkpoints the current state if the newest
# checkpoint is at least min_gap versions older, keeps the two newest checkpoints, and deletes
# the log up to the older of them, at most ``most`` records a call (the first held version
# says how far it got: the next call goes on).  Returns 1 if a checkpoint was made, 0 if not,
# -1 (no such memory).
_COMPACT = _PRELUDE + """
local latest, first, bad = bounds()
if bad then return redis.error_reply(bad) end
if not latest then return -1 end
local found = redis.call('ZREVRANGE', KEYS[7], 0, 1)
local newest
newest, bad = version(found[1], 'newest checkpoint')
if bad then return redis.error_reply(bad) end
if newest > latest then
  return redis.error_reply('LETHE checkpoint ' .. newest .. ' is past the latest version ' .. latest)
end
local made = 0
if latest - newest >= tonumber(ARGV[1]) then
  local at = KEYS[7] .. ':' .. latest
  redis.call('DEL', at .. ':entries')
  if redis.call('EXISTS', KEYS[6]) == 1 then redis.call('COPY', KEYS[6], at .. ':entries') end
  redis.call('SET', at .. ':head', redis.call('GET', KEYS[3]))
  redis.call('ZADD', KEYS[7], latest, latest)
  made = 1
  found = redis.call('ZREVRANGE', KEYS[7], 0, 1)
end
if not found[2] then return made end
local older
older, bad = version(found[2], 'older checkpoint')
if bad then return redis.error_reply(bad) end
for _, old in ipairs(redis.call('ZRANGEBYSCORE', KEYS[7], '-inf', '(' .. older, 'LIMIT', 0, 16)) do
  redis.call('UNLINK', KEYS[7] .. ':' .. old .. ':entries', KEYS[7] .. ':' .. old .. ':head')
  redis.call('ZREM', KEYS[7], old)
end
local stop = math.min(older, first + tonumber(ARGV[2]) - 1)
if stop >= first then
  for low = first, stop, 1000 do
    local versions = {}
    for v = low, math.min(low + 999, stop) do versions[#versions + 1] = v end
    redis.call('HDEL', KEYS[4], unpack(versions))
    redis.call('HDEL', KEYS[5], unpack(versions))
  end
  redis.call('SET', KEYS[8], stop + 1)
end
return made
"""

# ARGV: most.  Removes the memory's own keys, its configuration and latest version among them (so
# from the first call on every script and ``config`` find no such memory, and ``_OPEN`` refuses
# the name while its checkpoints are left), and at most ``most`` of its checkpoints, each with its
# copies; once none is left, version 0's copies and the checkpoints key.  Returns {how many of the
# memory's keys there were, 1 if checkpoints are left (call again) or 0}.  UNLINK: a large log or
# entries hash is freed outside the server's main thread, so a call costs what it removes.
_DROP = """
local found = redis.call('EXISTS', unpack(KEYS))
redis.call('UNLINK', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[8], KEYS[9])
if redis.call('TYPE', KEYS[7])['ok'] == 'zset' then
  local some = redis.call('ZRANGE', KEYS[7], 0, tonumber(ARGV[1]) - 1)
  for _, v in ipairs(some) do
    redis.call('UNLINK', KEYS[7] .. ':' .. v .. ':head', KEYS[7] .. ':' .. v .. ':entries')
  end
  if #some > 0 then redis.call('ZREM', KEYS[7], unpack(some)) end
  if redis.call('EXISTS', KEYS[7]) == 1 then return {found, 1} end
end
redis.call('UNLINK', KEYS[7] .. ':0:head', KEYS[7] .. ':0:entries', KEYS[7])
return {found, 0}
"""


def _lost(exc: Exception) -> bool:
    """Whether trying again may mend ``exc``: the connection failed or a reply timed out (not a
    refused login, which waiting does not mend)."""
    return isinstance(exc, (redis.ConnectionError, redis.TimeoutError)) and not isinstance(exc, _REFUSED)


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

    Eviction: lethe sets no TTL on its keys, and a memory with a key evicted
    is damaged.  The store refuses a server whose ``maxmemory-policy`` evicts
    any key (``allkeys-lru``, ``allkeys-lfu``, ``allkeys-random``), read from
    ``INFO memory`` when it is built; ``noeviction`` (a full server refuses
    writes) and the ``volatile-*`` policies (they evict only keys with a TTL)
    are safe.  Where the server does not say (``INFO`` refused, or without
    the field) nothing is checked.

    Damaged keys: no key's content makes a script run long.  Reads and
    compactions visit only the versions they need (a reader far behind a
    compacted log costs what it missed, a script call at most 1,000 records);
    a compaction deletes at most max(1,000, twice its ``min_gap``) log records,
    and the next ones go on where it stopped.  A key holding what lethe never
    writes (a version that is no number, a hole in the log, a key of the wrong
    type) raises :class:`~lethe.store.StoreError` naming it; a memory whose
    configuration key is gone while the rest of it is not (or its name is
    still listed) is never created afresh over it: :meth:`open` refuses, and
    :meth:`drop` removes what is left, at most 1,000 checkpoints a script call.

    :meth:`drop` removes a memory's keys in script calls of bounded length,
    then its name from the names set (``prefix:names``, apart from the
    memory's hash tag): see there for a drop cut off midway.
    After :meth:`close`, every method raises :class:`~lethe.store.StoreError`,
    a thread blocked in :meth:`wait` included.

    Args:
        url: A Redis URL (``"redis://host:6379/0"``), or a ``redis.Redis`` client.
        prefix: The first part of every key, to keep several stores in one database.
        timeout: Seconds to wait to connect and for each reply, and to keep
            trying to reach the server after a connection failed.
        allow_eviction: Accept a server whose ``maxmemory-policy`` is an
            ``allkeys-*`` policy, which may evict lethe's keys when the
            server is full (and so lose or damage memories).

    Raises:
        StoreError: the server cannot be reached, or its ``maxmemory-policy``
            evicts any key and ``allow_eviction`` is False.
    """

    def __init__(
        self,
        url: str | redis.Redis,
        *,
        prefix: str = "lethe",
        timeout: float = 30.0,
        allow_eviction: bool = False,
    ) -> None:
        if _MISSING:
            raise ImportError(_MISSING)
        timeout = checked_timeout(timeout)
        allow_eviction = flag(allow_eviction, "allow_eviction")
        if isinstance(url, str):
            self._client: redis.Redis = redis.Redis.from_url(
                url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=ClientRetry(NoBackoff(), 0)
            )
        else:
            self._client = url
        self._owned = isinstance(url, str)
        self.prefix = prefix
        self.timeout = timeout
        self._retry = Retry(timeout)
        self._closed = False
        self._transactions = True  # (False once the server refused this account MULTI: see load)
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
                ("drop", _DROP),
            )
        }
        self._run(self._load_scripts)
        if not allow_eviction:
            self._check_policy()

    def _load_scripts(self) -> Any:
        """Load the scripts into the server's cache, in one round trip (this is also the check
        that the server answers): each call then runs as one ``EVALSHA``, where the first call of
        each would find it missing, load it and send it again (three round trips).  A server that
        restarted since has forgotten them: a call loads its script again then."""
        if not isinstance(self._client, redis.Redis):  # a cluster's client: SCRIPT LOAD goes to every node
            return [self._client.script_load(script.script) for script in self._scripts.values()]
        pipe = self._client.pipeline(transaction=False)
        for script in self._scripts.values():
            pipe.script_load(script.script)
        return pipe.execute()

    def _check_policy(self) -> None:
        """Refuse a server whose ``maxmemory-policy`` (in ``INFO memory``) evicts any key."""

        def info() -> Any:
            try:
                return self._client.info("memory")
            except redis.ResponseError:  # INFO refused (an ACL): the policy cannot be told
                return {}

        found = self._run(info)
        if not isinstance(found, dict):
            return
        # One server's fields, or (a cluster client) one dict of them per node.
        sections = [found] if "maxmemory_policy" in found else [v for v in found.values() if isinstance(v, dict)]
        for section in sections:
            policy = section.get("maxmemory_policy")
            if isinstance(policy, bytes):
                policy = policy.decode(errors="replace")
            if isinstance(policy, str) and policy.startswith("allkeys-"):
                if self._owned:  # a client passed in stays its owner's to close
                    self._client.close()
                raise StoreError(
                    f"Redis evicts any key when it is full (maxmemory-policy {policy}), and lethe sets no TTL on"
                    " its keys: an evicted key would lose or damage a memory. Set maxmemory-policy to noeviction"
                    " (or a volatile-* policy, which evicts only keys with a TTL, never lethe's), or pass"
                    " allow_eviction=True to accept that risk"
                )

    def _keys(self, name: str) -> list[str]:
        tag = f"{self.prefix}:{{{name.encode().hex()}}}"
        return [f"{tag}:{key}" for key in _KEYS]

    def _closed_error(self) -> StoreError:
        return StoreError(f"{self!r}: the store is closed")

    def _retrying(self, call: Callable[[], T]) -> T:
        """``call()``, called again while the connection fails, for up to ``timeout`` seconds
        after the first failure; then the last ``ConnectionError`` or ``TimeoutError`` is raised.
        A closed store raises :class:`StoreError` instead, before the first call or after a failure."""

        def attempt() -> T:
            if self._closed:
                raise self._closed_error()
            try:
                return call()
            except _REFUSED:
                raise
            except (redis.ConnectionError, redis.TimeoutError):
                if self._closed:
                    raise self._closed_error() from None
                raise

        return self._retry.call(attempt, _lost)

    def _run(self, call: Callable[[], T], name: str | None = None) -> T:
        """``call()``, tried again as :meth:`_retrying` does; every failure as :class:`StoreError`
        (its message naming ``name``, when given)."""
        where = "" if name is None else f"{name!r}: "
        try:
            return self._retrying(call)
        except StoreError:
            raise
        except Exception as exc:
            raise self._failure(exc, where) from None

    def _failure(self, exc: Exception, where: str) -> StoreError:
        """The :class:`StoreError` for ``exc``, raised by redis-py during a call."""
        if self._closed:  # closed under a call in flight: its socket went (a ValueError, or others)
            return self._closed_error()
        if isinstance(exc, redis.ConnectionError):
            return StoreError(f"{where}cannot reach Redis: {exc}")
        if isinstance(exc, redis.TimeoutError):
            return StoreError(f"{where}Redis did not answer within {self.timeout} s: {exc}")
        if isinstance(exc, redis.ResponseError):
            message = str(exc)
            if message.startswith("LETHE "):  # the scripts' own report of a damaged key
                return StoreError(f"{where}the store is damaged: {message[len('LETHE ') :]}")
            return StoreError(f"{where}Redis answered with an error: {message}")
        if isinstance(exc, ValueError):  # a reply redis-py cannot read (text that is not UTF-8)
            return StoreError(f"{where}Redis answered what cannot be read: {exc}")
        if isinstance(exc, redis.RedisError):
            return StoreError(f"{where}{exc}")
        raise exc

    def _script(self, script: str, name: str, *args: Any) -> Any:
        keys = self._keys(name)
        return self._run(lambda: self._scripts[script](keys=keys, args=list(args)), name)

    @staticmethod
    def _text(value: bytes | str, name: str | None = None) -> str:
        if isinstance(value, str):
            return value
        try:
            return value.decode()
        except UnicodeDecodeError as exc:
            where = "" if name is None else f"{name!r}: "
            raise StoreError(f"{where}Redis holds a value that is not UTF-8 text ({exc})") from None

    @staticmethod
    def _version(value: object, name: str) -> int:
        """A version number as the server sent it; :class:`StoreError` for anything lethe never writes."""
        text = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
        if not (0 < len(text) <= 13 and text.isascii() and text.isdigit()):
            raise StoreError(
                f"{name!r}: the store is damaged: the latest version is {text[:24]!r}, not a version number"
            )
        return int(text)

    def close(self) -> None:
        """Close the client's connections.  Every method raises :class:`StoreError` afterwards,
        a thread blocked in :meth:`wait` included."""
        self._closed = True
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
        return sorted(self._text(n) for n in self._run(lambda: self._client.smembers(self._names)))

    def config(self, name: str) -> str:
        """See :meth:`lethe.store.Store.config`."""
        key = self._keys(name)[0]
        found = self._run(lambda: self._client.get(key), name)
        if found is None:
            raise KeyError(name)
        return self._text(found, name)

    def open(self, name: str, config: str, head: str, rows: Sequence[tuple[int, str]]) -> str:
        """See :meth:`lethe.store.Store.open`.  A memory whose configuration key is missing while
        another of its keys is there is refused (:class:`~lethe.store.StoreError`); one with no
        key left whose name is still in the names set is gone (:class:`~lethe.store.MemoryGone`):
        dropped by another client that has not unlisted it yet (so it is opened again once the
        drop is done), or its keys deleted (``drop(name)`` unlists it)."""
        pairs = [part for seq, row in rows for part in (seq, row)]
        # The names set lives apart from the memory's hash tag (its own Cluster slot), so it is
        # read before the script: a name listed there was created, whatever keys are left of it.
        listed = self._run(lambda: self._client.sismember(self._names, name), name)
        stored = self._script("open", name, config, head, 1 if listed else 0, *pairs)
        if stored == -1 and not self._run(lambda: self._client.sismember(self._names, name), name):
            # (a drop unlisted it after the first look: the name is new now)
            stored = self._script("open", name, config, head, 0, *pairs)
        if stored == -1:
            raise MemoryGone(
                f"{name!r} is no longer in the store: the configuration of an existing memory is missing, and"
                " every other key of it, while its name is still listed (a drop of it not done yet, or cut off"
                " before it unlisted the name; or its keys deleted). Nothing was written; open it again once"
                f" the drop is done, or store.drop({name!r}) unlists it"
            )
        if isinstance(stored, int):
            raise StoreError(f"{config_missing(name)} (so does a drop of it cut off midway, or still under way)")
        self._run(lambda: self._client.sadd(self._names, name), name)
        return self._text(stored, name)

    def load(self, name: str) -> tuple[int, str, list[tuple[int, str]]]:
        """See :meth:`lethe.store.Store.load`.

        The latest version, its head and the entries hash (``HGETALL``) in one transaction
        (``MULTI``/``EXEC``): one round trip, read at one instant.  Not a script: turning a
        large hash into a script's reply takes the server longer than reading it.  An
        account that may not run ``MULTI`` (one that may only read, and run lethe's
        scripts) reads through a script.
        """
        if not self._transactions:
            found = self._script("load", name)
            if found is None:
                raise KeyError(name)
            return self._state(found, name)
        keys = self._keys(name)

        def read() -> list[Any] | None:
            pipe = self._client.pipeline(transaction=True)
            pipe.get(keys[1])
            pipe.get(keys[2])
            pipe.hgetall(keys[5])
            try:
                return pipe.execute()
            except redis.exceptions.ResponseError as exc:
                # An account refused MULTI (NOPERM), or MULTI alone ("EXEC without MULTI"). Any
                # other refusal is the server's answer, and the script would get the same.
                if isinstance(exc, redis.exceptions.NoPermissionError) or "EXEC without MULTI" in str(exc):
                    return None
                raise

        got = self._run(read, name)
        if got is None:
            self._transactions = False
            return self.load(name)
        held, head, entries = got
        if held is None:
            raise KeyError(name)
        version = self._version(held, name)
        if head is None:
            raise StoreError(f"{name!r}: the store is damaged: the head of version {version} is missing")
        if type(entries) is not dict:  # (not what redis-py makes of a hash)
            raise StoreError(f"{name!r}: the server sent {type(entries).__name__} for the entries, not a hash")
        return version, self._text(head, name), self._keyed(list(entries), list(entries.values()), name)

    def _state(self, found: list[Any], name: str) -> tuple[int, str, list[tuple[int, str]]]:
        """The ``(version, head, rows)`` a script returned (a load, a checkpoint): the version,
        its head, and the entries hash as ``HGETALL`` gives it, each field (the put order its
        row is keyed by) then the row.

        Raises:
            StoreError: as :meth:`_keyed`.
        """
        pairs = found[2]
        if type(pairs) is not list:  # (not what these scripts return: a script of another version)
            raise StoreError(f"{name!r}: the server sent {type(pairs).__name__} for the entries, not a list")
        return int(found[0]), self._text(found[1], name), self._keyed(pairs[0::2], pairs[1::2], name)

    def _keyed(self, fields: list[Any], rows: list[Any], name: str) -> list[tuple[int, str]]:
        """The ``(seq, row)`` pairs of an entries hash's ``fields`` (each the put order its row
        is keyed by) and ``rows``, as the server sent them.

        Raises:
            StoreError: a field is not a put order as lethe writes one (digits, no leading
                zero): a commit deletes the field its put order names, never that one; or a
                field or row is not UTF-8 text.
        """
        texts = self._texts(fields, name)
        seqs = ",".join(texts)  # checked as one string, at C speed
        keyed = json.loads(f"[{seqs}]") if _SEQS.fullmatch(seqs) is not None else []
        if len(keyed) != len(texts):  # (a field that is not one put order: with a comma, say)
            bad = next((seq for seq in texts if _SEQ.fullmatch(seq) is None), seqs)
            raise StoreError(f"{name!r}: the store is damaged: an entry is keyed by {bad[:24]!r}, not a put order")
        return list(zip(keyed, self._texts(rows, name), strict=True))

    @classmethod
    def _texts(cls, values: list[Any], name: str) -> list[str]:
        """``values`` (as the server sent them) as text: decoded at once, joined by a character
        that neither a put order nor a JSON text holds, else one by one (naming what is wrong)."""
        try:
            texts = b"\0".join(values).decode().split("\0")
        except (TypeError, UnicodeDecodeError):
            texts = []
        if len(texts) == len(values) and values:
            return texts
        return [cls._text(value, name) for value in values]

    def read(self, name: str, after: int, upto: int | None = None) -> Sequence[tuple[int, str]]:
        """See :meth:`lethe.store.Store.read`.

        Read a chunk of at most 1,000 records a script call, each call at one
        instant, up to the latest version the first call found.  A compaction
        between two calls shows as one: the rows then start later than
        ``after + 1`` (from the first version the log still holds), never with
        a hole in the middle or as a log that went back.
        """
        end = -1 if upto is None else max(upto, 0)  # -1: up to the latest, which the first call tells
        rows: list[tuple[int, str]] = []
        cursor = after
        while True:
            found = self._script("read", name, cursor, end, _READ_CHUNK)
            if found is None:
                raise KeyError(name)
            latest, first = int(found[0]), int(found[1])
            if rows and first > cursor + 1:
                # Compacted past the records still to read since the last call: those read go too,
                # and the rows start where the log now does (the caller sees the compaction).
                rows = []
                if upto is None:
                    end = latest
                continue
            if end < 0:
                end = latest
            chunk = [(int(found[i]), self._text(found[i + 1], name)) for i in range(2, len(found), 2)]
            rows.extend(chunk)
            if len(chunk) < _READ_CHUNK or chunk[-1][0] >= end:
                return rows
            cursor = chunk[-1][0]

    def append(
        self,
        name: str,
        version: int,
        record: str,
        head: str,
        written: Sequence[tuple[int, str]],
        removed: Sequence[int],
        config: str | None = None,
        parent: str | None = None,
    ) -> bool:
        """See :meth:`lethe.store.Store.append`; the class docstring tells how a lost reply is resolved."""
        if version > _MAX_VERSION:  # the latest version read was the last the scripts read: nothing is sent
            raise StoreError(f"{name!r}: the store is damaged: its latest version is {version - 1}, the last it keeps")
        operation = secrets.token_hex(8)
        pairs = [part for seq, row in written for part in (seq, row)]
        keys = self._keys(name)
        args = [version, record, head, operation, config or "", parent or "", len(removed), *removed, *pairs]
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
        except Exception as exc:
            failure = exc if isinstance(exc, StoreError) else self._failure(exc, f"{name!r}: ")
            if sends == 0 or (sends == 1 and not self._resends and not self._closed):
                raise failure from None  # refused before it ran: nothing written
            raise CommitUnknown(f"{unknown}: it was sent, then {failure}") from None
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
        last 64 or so kept); this blocks on ``XREAD BLOCK`` from the newest item,
        read in one round trip before the latest version (a commit sets both at
        once), so no commit in between is missed: one after the item is read is
        either in the version read or after that item.  No transaction: an
        account that may not run ``MULTI`` waits as any other.
        """
        keys = self._keys(name)
        deadline = time.monotonic() + timeout

        def state() -> Any:
            pipe = self._client.pipeline(transaction=False)
            pipe.xrevrange(keys[8], count=1)
            pipe.get(keys[1])
            return pipe.execute()

        while True:
            newest, found = self._run(state, name)
            if found is None:
                raise KeyError(name)
            latest = self._version(found, name)
            left = deadline - time.monotonic()
            if latest != after or left <= 0:
                return latest
            since = newest[0][0] if newest else "0-0"
            # Below the socket timeout, so a quiet stream is not taken for a dead server.
            block = max(1, int(min(left, self.timeout / 2) * 1000))
            self._run(partial(self._client.xread, {keys[8]: since}, count=1, block=block), name)

    def time(self) -> float:
        """See :meth:`lethe.store.Store.time`: the server's clock (``TIME``)."""
        seconds, micros = self._run(self._client.time)
        return int(seconds) + int(micros) / 1e6

    def checkpoint(self, name: str, at_most: int | None = None) -> tuple[int, str, list[tuple[int, str]]]:
        """See :meth:`lethe.store.Store.checkpoint`."""
        found = self._script("checkpoint", name, "+inf" if at_most is None else at_most)
        if not found:  # nil: no such memory; {}: no checkpoint that old
            raise KeyError(name if found is None or at_most is None else at_most)
        return self._state(found, name)

    def compact(self, name: str, min_gap: int) -> bool:
        """See :meth:`lethe.store.Store.compact`.  Sent again after a lost reply, a
        compaction that was made answers False (the checkpoint it made is recent).

        The log before the older kept checkpoint is deleted at most
        max(1,000, 2 * ``min_gap``) records a call (so one call never runs
        long, and a caller compacting every ``min_gap`` commits outpaces
        them); every call, checkpoint or not, goes on where the last stopped.
        """
        done = self._script("compact", name, min_gap, max(_TRIM, 2 * min_gap))
        if done == -1:
            raise KeyError(name)
        return bool(done)

    def drop(self, name: str) -> bool:
        """See :meth:`lethe.store.Store.drop`.

        The memory's keys go in script calls (its hash tag: one Cluster slot), each bounded
        whatever the keys hold: the first removes its configuration, state, log and operation
        ids at once (UNLINK: freed outside the server's main thread), so from then on every
        method finds no such memory; each removes at most 1,000 checkpoints, and calls follow
        until none is left (so O(checkpoints / 1,000) calls, usually one).  Then the name leaves
        the names set (another slot, so not in the same instant: :meth:`open` in between raises
        :class:`~lethe.store.MemoryGone`; and a process opening the name while it is dropped
        may list it again with no keys left, which :meth:`open` then finds gone until the name
        is dropped again).

        A drop cut off midway (the process killed, or the server unreachable for ``timeout``
        seconds: :class:`~lethe.store.StoreError`) leaves the memory absent to every reader and
        writer, and its name listed in :meth:`names` with checkpoints left: :meth:`open` refuses
        it (:class:`~lethe.store.StoreError` naming ``drop``) rather than create it afresh beside
        them, until ``drop(name)`` is called again, which removes the rest.
        """
        existed = False
        more = True
        while more:
            found, left = self._script("drop", name, _DROP_CHUNK)
            existed = existed or int(found) > 0
            more = bool(left)
        listed = self._run(lambda: self._client.srem(self._names, name), name)
        return existed or bool(listed)
