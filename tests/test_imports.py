"""The module graph of ``src/lethe``: no import cycles, and a core that imports nothing outside it.

Every ``import`` counts, also one inside a function (which hides a cycle from
Python's import machinery but not from a reader), and ``if TYPE_CHECKING``
blocks do too: a layout without cycles needs none of these tricks.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import lethe

SRC = Path(lethe.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The lethe modules ``name`` imports (a package's ``__init__`` counts as the package)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            submodules = {f"{target}.{alias.name}" for alias in node.names} & modules.keys()
            found |= submodules
            if len(submodules) < len(node.names):  # a name the module itself defines
                found.add(target)
    return {m for m in found if m in modules and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph``, as the list of modules along it; None if there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def test_no_module_of_lethe_imports_itself_through_another() -> None:
    # Importing from the package itself (as the command line does, a client of the public API)
    # counts too: it closes a loop when the package imports that module.
    cycle = _cycle(_graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


#: The engines on servers, each the only module that imports its optional extra's client, and
#: the vector rows of a search index, the only module that imports numpy (the vector extra).
EXTRAS = {
    "lethe.store._postgres": {"psycopg"},
    "lethe.store._redis": {"redis"},
    "lethe.search._dense": {"numpy"},
    "lethe.search._ann": {"numpy", "usearch"},
    "lethe.integrations.langgraph": {"langgraph", "langchain_core"},
    "lethe.integrations.mcp": {"mcp", "mcp_types", "pydantic", "anyio", "uvicorn", "starlette"},
}


def test_the_core_imports_only_the_standard_library() -> None:
    stdlib = set(sys.stdlib_module_names)
    outside: list[str] = []
    for name, path in _modules().items():
        allowed = stdlib | EXTRAS.get(name, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            roots = []
            if isinstance(node, ast.Import):
                roots = [alias.name.partition(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                roots = [node.module.partition(".")[0]]
            outside += [f"{name}: {root}" for root in roots if root not in allowed and root != "lethe"]
    assert outside == []


def test_serialization_is_a_plain_converter() -> None:
    graph = _graph()
    assert "lethe._memory.memory" not in graph["lethe._memory.document"]


def test_the_store_imports_whole_without_its_extras() -> None:
    # A star import asks for every name in __all__: with psycopg or redis-py missing, it raised
    # the install hint of an engine nobody asked for.  The hint now comes when one is built.
    import subprocess

    script = (
        "import sys; sys.modules['psycopg'] = None; sys.modules['redis'] = None\n"
        "from lethe.store import *\n"
        "import lethe.store\n"
        "assert {'PostgresStore', 'RedisStore'} <= set(dir(lethe.store)), dir(lethe.store)\n"
        "for cls, arg, extra in ((PostgresStore, 'host=x', 'postgres'), (RedisStore, 'redis://x', 'redis')):\n"
        "    try:\n"
        "        cls(arg)\n"
        "    except ImportError as exc:\n"
        "        assert f\"pip install 'lethe-decay[{extra}]'\" in str(exc), exc\n"
        "    else:\n"
        "        raise AssertionError(cls)\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "ok", done.stderr


#: Each layer of lethe and the layers it may import: the direction of imports the
#: architecture map (docs/architecture.md) draws.  A module's layer is its top folder.
LAYERS = {
    "lethe._core": set(),
    "lethe.decay": {"lethe._core"},
    "lethe.ranking": {"lethe._core", "lethe.decay"},
    "lethe.search": {"lethe._core"},
    "lethe._memory": {"lethe._core", "lethe.decay", "lethe.ranking", "lethe.search"},
    "lethe.store": {"lethe._core", "lethe.decay", "lethe.ranking", "lethe.search", "lethe._memory", "lethe"},
    "lethe.integrations": {
        "lethe._core",
        "lethe.decay",
        "lethe.ranking",
        "lethe.search",
        "lethe._memory",
        "lethe.store",
        "lethe",
    },
    "lethe._cli": {
        "lethe._core",
        "lethe.decay",
        "lethe.ranking",
        "lethe.search",
        "lethe._memory",
        "lethe.store",
        "lethe.integrations",
        "lethe",
    },
}


def _layer(module: str) -> str | None:
    return next((layer for layer in LAYERS if module == layer or module.startswith(layer + ".")), None)


def test_every_module_belongs_to_a_layer() -> None:
    outside = sorted(m for m in _modules() if _layer(m) is None and m not in ("lethe", "lethe.__main__"))
    assert outside == []


def test_each_layer_imports_only_the_layers_below_it() -> None:
    wrong = []
    for module, imported in _graph().items():
        layer = _layer(module)
        if layer is None:
            continue
        allowed = LAYERS[layer] | {layer}
        wrong += [(module, other) for other in sorted(imported) if (_layer(other) or other) not in allowed]
    assert wrong == []


def _lines_of_class(path: Path, name: str) -> int:
    node = next(
        n for n in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(n, ast.ClassDef) and n.name == name
    )
    assert node.end_lineno is not None
    return node.end_lineno - node.lineno + 1


def test_memory_is_its_api_not_its_plumbing() -> None:
    """``Memory`` with its lethe-defined base stays under 850 lines, docstrings included: the
    plumbing lives in ``_memory/version.py``, ``writes.py``, ``reads.py`` and ``searching.py``
    (700 until ``search`` and ``recall`` joined the API, with their options and docstrings)."""
    memory = _lines_of_class(SRC / "_memory" / "memory.py", "Memory")
    base = _lines_of_class(SRC / "_memory" / "version.py", "Version")
    assert memory + base < 850


def test_the_document_module_stays_a_plain_converter() -> None:
    """Reading and writing documents is driven by the declarations: ``document.py`` stays small."""
    assert len((SRC / "_memory" / "document.py").read_text(encoding="utf-8").splitlines()) < 350
