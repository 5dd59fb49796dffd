"""LangGraph's own store tests, run against :class:`LetheStore` in this process and over SQLite.

The ported files build every store as ``LetheStore(...)`` (this module's subclass) or take the
``store`` fixture; the autouse ``engine`` fixture runs each test twice: once with the namespaces
kept in this process, once in a fresh lethe ``SQLiteStore`` file for every store the test builds.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lethe.integrations import langgraph
from lethe.store import SQLiteStore, Store

_engines: list[Store] = []
_where: list[Path | None] = [None]
_count = itertools.count()


def _engine() -> Store | None:
    folder = _where[0]
    if folder is None:
        return None
    engine = SQLiteStore(str(folder / f"store-{next(_count)}.db"))
    _engines.append(engine)
    return engine


class LetheStore(langgraph.LetheStore):
    """:class:`lethe.integrations.langgraph.LetheStore` over the engine the running test asks for."""

    def __init__(self, **options: Any) -> None:
        super().__init__(_engine(), **options)


@pytest.fixture(autouse=True, params=["process", "sqlite"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    _where[0] = tmp_path if request.param == "sqlite" else None
    try:
        yield request.param
    finally:
        _where[0] = None
        while _engines:
            _engines.pop().close()


@pytest.fixture
def store(engine: str) -> Iterator[langgraph.LetheStore]:
    with LetheStore() as made:
        yield made
