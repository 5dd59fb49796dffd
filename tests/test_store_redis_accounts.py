"""``RedisStore`` on accounts that may not run every command (Redis ACLs): a load reads in one
``MULTI``/``EXEC`` transaction, and an account refused it reads through lethe's load script and
waits for commits as any other.
On the session's ``redis-server`` (``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lethe import Memory
from lethe.store import RedisStore, Shared

from ._support import fake_clock

redis = pytest.importorskip("redis")

SECRET = "s3cret-pass"


@pytest.fixture
def account(redis_url: str, redis_prefix: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of an account whose commands are ``request.param``, on the prefix's keys."""
    name = f"acct_{redis_prefix}"
    client = redis.Redis.from_url(redis_url)
    client.acl_setuser(name, enabled=True, passwords=[f"+{SECRET}"], keys=[f"{redis_prefix}:*"], commands=request.param)
    yield redis_url.replace("redis://", f"redis://{name}:{SECRET}@")
    client.acl_deluser(name)
    client.close()


@pytest.mark.parametrize(
    "account",
    [
        ["+@all", "-multi"],  # MULTI refused, EXEC not: the server answers "EXEC without MULTI"
        ["+@all", "-multi", "-exec"],
        ["+@read", "+@connection", "+evalsha", "+script|load"],  # one that may only read
    ],
    ids=["no MULTI", "no MULTI nor EXEC", "reads only"],
    indirect=True,
)
def test_an_account_that_may_not_run_multi_loads_through_the_script(
    redis_url: str, redis_prefix: str, account: str
) -> None:
    clock = fake_clock()
    with RedisStore(redis_url, prefix=redis_prefix) as owner:
        written = Shared(owner, "notes", Memory(clock_fn=clock)).update(
            lambda m: m.put("likes tea", key="tea").put("uses vim", key="vim")
        )
    with RedisStore(account, prefix=redis_prefix) as store:
        for _ in range(2):  # (and again, once it knows)
            assert Shared(store, "notes", Memory(clock_fn=clock)).current() == written


@pytest.mark.parametrize(
    "account",
    [["+@all", "-multi"], ["+@all", "-multi", "-exec"], ["+@read", "+@connection", "+evalsha", "+script|load"]],
    ids=["no MULTI", "no MULTI nor EXEC", "reads only"],
    indirect=True,
)
def test_an_account_that_may_not_run_multi_waits_for_commits(redis_url: str, redis_prefix: str, account: str) -> None:
    clock = fake_clock()
    with RedisStore(redis_url, prefix=redis_prefix) as owner, RedisStore(account, prefix=redis_prefix) as store:
        writer = Shared(owner, "notes", Memory(clock_fn=clock))
        writer.update(lambda m: m.put("likes tea", key="tea"))
        follower = Shared(store, "notes", Memory(clock_fn=clock))
        assert not follower.wait(0.05)  # nothing committed meanwhile
        latest = writer.update(lambda m: m.put("uses vim", key="vim"))
        assert follower.wait(5)
        assert follower.current() == latest
