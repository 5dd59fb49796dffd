"""Records declared once: every builder and codec of an entry follows its field list.

A copy of ``Entry``'s declaration with one more field (a subclass adding it) is
enough for the constructor, the copies, a put's builder, the document and the
row to carry it: nothing else is written by hand per field.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from lethe import Entry
from lethe._core.record import (
    ANY,
    CLOCK,
    COUNT,
    GIVEN,
    INSTANT,
    OPTION,
    changer,
    declare,
    evolve,
    fields,
    fresh_builder,
)
from lethe._memory.codec import codec, reading
from lethe.decay import ACTR, Exponential

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
US0 = T0.timestamp() * 1e6


@dataclass(frozen=True, slots=True, kw_only=True)
class Noted(Entry[Any, Any]):
    """``Entry`` with two more fields: any value given at put, and a count."""

    note: Any = field(default=None, metadata=declare(ANY, put=OPTION, since=4))
    votes: int = field(default=0, metadata=declare(COUNT, since=4))


def noted(**changes: Any) -> Noted:
    return Noted(**{"key": "k", "value": "v", "inserted_at": T0, "last_accessed_at": T0, **changes})


def test_the_copy_declares_every_field_of_entry_and_its_own() -> None:
    names = [f.name for f in fields(Noted)]
    assert names == [f.name for f in fields(Entry)] + ["note", "votes"]


def test_the_constructor_checks_the_new_fields_by_their_kind() -> None:
    assert noted(note=[1], votes=3).votes == 3
    with pytest.raises(ValueError, match="votes"):
        noted(votes=-1)


def test_copies_keep_the_new_fields() -> None:
    e = noted(note="n", votes=2)
    assert evolve(e, pinned=True) == noted(note="n", votes=2, pinned=True)
    assert evolve(e, note="m").note == "m"
    assert changer(Noted, ("votes",))(e, 5).votes == 5


def test_a_put_builds_the_new_option_from_the_options() -> None:
    fresh = fresh_builder(Noted)
    meta: dict[str, Any] = {}
    e = fresh("k", "v", 7, (T0, US0), (True, 2.0, meta, None, None, "a note"))
    assert e == noted(seq=7, pinned=True, importance=2.0, note="a note")
    assert (e.inserted_us, e.accessed_us, e.votes) == (US0, US0, 0)


@pytest.mark.parametrize("decay_fn", [Exponential(), ACTR()], ids=["stateless", "stateful"])
def test_the_document_and_the_row_carry_the_new_fields(decay_fn: Any) -> None:
    forms = codec(Noted)
    e = noted(note={"a": [1, 2]}, votes=9, metadata={"m": 1}, expires_at=T0 + timedelta(days=1), seq=3)
    if isinstance(decay_fn, ACTR):
        e = evolve(e, decay_state=(US0,))
    document = json.loads(json.dumps(forms.to_document(e, decay_fn, {})))
    assert (document["note"], document["votes"]) == ({"a": [1, 2]}, 9)
    assert forms.from_document(document, "entries[0].", reading(decay_fn)) == e
    row = json.loads(json.dumps(forms.to_row(e, decay_fn, None)))
    assert (forms.row_names[0], forms.row_names[-2:]) == ("seq", ("note", "votes"))
    assert row[-2:] == [{"a": [1, 2]}, 9]
    assert forms.from_row(row, ".", reading(decay_fn)) == e


def test_reading_checks_the_new_fields_and_names_them() -> None:
    forms = codec(Noted)
    document = forms.to_document(noted(), Exponential(), {})
    with pytest.raises(ValueError, match=r"^entries\[4\]\.votes: expected an int"):
        forms.from_document({**document, "votes": -2}, "entries[4].", reading(Exponential()))
    with pytest.raises(ValueError, match=r"^entries\[4\]\.value: missing"):
        forms.from_document({k: v for k, v in document.items() if k != "value"}, "entries[4].", reading(Exponential()))
    without_note = {k: v for k, v in document.items() if k != "note"}  # written before it existed
    assert forms.from_document(without_note, "entries[4].", reading(Exponential())).note is None
    row = forms.to_row(noted(), Exponential(), None)
    with pytest.raises(ValueError, match=r"^\.votes: expected an int"):
        forms.from_row([*row[:-1], "x"], ".", reading(Exponential()))
    with pytest.raises(ValueError, match=r"^: expected a list of 17 fields"):
        forms.from_row(row[:12], ".", reading(Exponential()))


def test_entrys_own_forms_hold_exactly_its_declared_fields() -> None:
    forms = codec(Entry)
    e = Entry(key=(1, "a"), value=[1], inserted_at=T0, last_accessed_at=T0 + timedelta(seconds=1), seq=4)
    document = forms.to_document(e, Exponential(), {})
    assert set(document) == {f.name for f in fields(Entry)} == forms.names
    assert forms.from_document(json.loads(json.dumps(document)), "", reading(Exponential())) == e


def test_declarations_are_refused_when_they_cannot_be_built() -> None:
    with pytest.raises(ValueError, match="kind"):
        declare("prose")
    with pytest.raises(ValueError, match="put"):
        declare(ANY, put="later")
    with pytest.raises(ValueError, match="exact"):
        declare(INSTANT)
    with pytest.raises(ValueError, match="exact"):
        declare(ANY, exact="x_us")

    @dataclass(frozen=True)
    class Unslotted:
        x: int = field(metadata=declare(ANY, put=GIVEN))

    assert [f.name for f in fields(Unslotted)] == ["x"]
    with pytest.raises(TypeError, match="not a slot"):
        changer(Unslotted, ("x",))

    @dataclass(frozen=True, slots=True)
    class Dangling:
        at: datetime = field(metadata=declare(INSTANT, exact="at_us"))

    with pytest.raises(TypeError, match="at_us"):
        fields(Dangling)
    with pytest.raises(TypeError, match="no field 'nope'"):
        changer(Noted, ("nope",))
    with pytest.raises(ValueError, match="instants only"):
        declare(COUNT, put=CLOCK)

    @dataclass(frozen=True, slots=True)
    class Loose:
        at: datetime = field(metadata=declare(INSTANT, exact="at_us"))
        until: datetime | None = field(default=None, metadata=declare(INSTANT, exact="until_us", after="at"))
        at_us: float = 0.0
        until_us: float | None = None

    with pytest.raises(TypeError, match="both must be required instants"):
        fields(Loose)

    @dataclass(frozen=True, slots=True)
    class Early:
        x: int = field(default=0, metadata=declare(COUNT, since=3))
        y: int = field(default=0, metadata=declare(COUNT))

    with pytest.raises(TypeError, match="fields added later come last"):
        fields(Early)


def test_a_subclass_of_entry_without_slots_is_an_entry() -> None:
    class Plain(Entry[Any, Any]):
        pass

    assert Plain(key="k", value="v", inserted_at=T0, last_accessed_at=T0).access_count == 0


# Every name the generated code uses for itself, as a field name: none may clash.
_RESERVED = [
    "r",
    "e",
    "raw",
    "where",
    "reading",
    "plain",
    "moments",
    "t",
    "fn",
    "texts",
    "stamp",
    "options",
    "content",
    "type",
]


@pytest.mark.parametrize("name", _RESERVED)
def test_a_field_may_take_any_name(name: str) -> None:
    cls = dataclasses.make_dataclass(
        "Named",
        [(name, Any, field(default=None, metadata=declare(ANY, put=OPTION, since=4)))],
        bases=(Entry,),
        frozen=True,
        slots=True,
        kw_only=True,
    )
    e = cls(key="k", value="v", inserted_at=T0, last_accessed_at=T0, **{name: [name]})
    forms = codec(cls)
    document = json.loads(json.dumps(forms.to_document(e, Exponential(), {})))
    assert forms.from_document(document, "", reading(Exponential())) == e
    row = json.loads(json.dumps(forms.to_row(e, Exponential(), None)))
    assert forms.from_row(row, ".", reading(Exponential())) == e
    made = fresh_builder(cls)("k", "v", 0, (T0, US0), (False, 1.0, {}, None, None, [name]))
    assert getattr(made, name) == [name]


@dataclass(frozen=True, slots=True, kw_only=True)
class Later(Entry[Any, Any]):
    """``Entry`` with a field added in a later format version, and a list made per record."""

    note: str | None = field(default=None, metadata=declare(ANY, put=OPTION, since=4))
    tags: list[str] = field(default_factory=list, metadata=declare(ANY, since=4))


def test_data_written_before_a_field_existed_reads_its_default() -> None:
    old, new = codec(Entry), codec(Later)
    e = Entry(key="k", value="v", inserted_at=T0, last_accessed_at=T0)
    document = json.loads(json.dumps(old.to_document(e, Exponential(), {})))
    back = new.from_document(document, "entries[0].", reading(Exponential()))
    assert (back.note, back.tags, back.key) == (None, [], "k")
    row = json.loads(json.dumps(old.to_row(e, Exponential(), None)))
    assert new.from_row(row, ".", reading(Exponential())) == back
    with pytest.raises(ValueError, match=r"^: expected a list of 17 fields"):
        new.from_row(row[:12], ".", reading(Exponential()))


def test_a_fresh_record_gets_its_own_default_list() -> None:
    fresh = fresh_builder(Later)
    a = fresh("a", 1, 0, (T0, US0), (False, 1.0, {}, None, None, None))
    b = fresh("b", 2, 1, (T0, US0), (False, 1.0, {}, None, None, None))
    assert a.tags == b.tags == []
    assert a.tags is not b.tags


def test_a_record_with_no_fast_test_reads_back() -> None:
    @dataclass(frozen=True, slots=True)
    class Point:
        x: Any = field(metadata=declare(ANY, put=GIVEN))

    forms = codec(Point)
    assert forms.from_document(forms.to_document(Point(3), None, {}), "", reading(Exponential())) == Point(3)


SRC = Path(__file__).resolve().parent.parent / "src" / "lethe"


def _positional_calls(tree: ast.AST) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and sum(not isinstance(a, ast.Starred) for a in node.args) > 5
    ]


@pytest.mark.parametrize(
    "module", ["_core/entry.py", "_core/record.py", "_memory/codec.py", "_memory/document.py", "store/_records.py"]
)
def test_no_entry_is_built_from_a_long_list_of_positional_arguments(module: str) -> None:
    """The modules that build and read entries pass fields by name or by the declaration."""
    tree = ast.parse((SRC / module).read_text(encoding="utf-8"))
    assert _positional_calls(tree) == []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            a = node.args
            assert len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) <= 9, node.name


# -- the rule on long argument lists, over all of src -------------------------

#: Calls that may pass more than 5 positional arguments (not counting starred ones): hot-path
#: node builders, each with a ``#`` comment on its line or the line before saying why.
MAX_LONG_CALLS = 3
#: The functions that may take more than 9 parameters (self and cls not counted): the memory's
#: constructor (written by the dataclass, so not in the source), its public write methods, and
#: ``AdaptiveDecay.__init__``, a public constructor that must take the model's 13 declared
#: parameters one by one (``Model.__init_subclass__`` checks them against ``params``).
# AdaptiveDecay.__init__ takes the model's 13 declared parameters: its public constructor, checked
# against the declaration by the model base (a deliberate exception to the rule).
MANY_PARAMETERS = frozenset(
    {"Memory.__init__", "Memory.put", "Memory.put_many", "Memory.update", "AdaptiveDecay.__init__"}
)


def _modules() -> list[Path]:
    import lethe

    root = Path(lethe.__file__).resolve().parent
    found = sorted(root.rglob("*.py"))
    assert len(found) > 20, root  # the package itself, not a stray copy
    return found


def _comment_lines(source: str) -> set[int]:
    import io
    import tokenize

    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {tok.start[0] for tok in tokens if tok.type == tokenize.COMMENT}


def _positional(call: ast.Call) -> int:
    return sum(not isinstance(a, ast.Starred) for a in call.args)


def _parameters(args: ast.arguments) -> int:
    named = [*args.posonlyargs, *args.args]
    count = len(named) + len(args.kwonlyargs) + (args.vararg is not None) + (args.kwarg is not None)
    return count - 1 if named and named[0].arg in ("self", "cls") else count


def _functions(tree: ast.AST, outer: str = "") -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function of ``tree``, nested ones included, with its qualified name (``Class.method``)."""
    found: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append((outer + node.name, node))
            found += _functions(node, f"{outer}{node.name}.<locals>.")
        elif isinstance(node, ast.ClassDef):
            found += _functions(node, f"{outer}{node.name}.")
        else:
            found += _functions(node, outer)
    return found


def test_calls_pass_at_most_five_positional_arguments_but_a_few_commented_ones() -> None:
    """At most 3 calls in all of src pass more than 5 positional arguments, each saying why."""
    long_calls: list[str] = []
    uncommented: list[str] = []
    for path in _modules():
        source = path.read_text(encoding="utf-8")
        comments = _comment_lines(source)
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and _positional(node) > 5:
                where = f"{path.name}:{node.lineno}: {ast.unparse(node.func)}(...) with {_positional(node)}"
                long_calls.append(where)
                if not {node.lineno, node.lineno - 1} & comments:
                    uncommented.append(where)
    assert len(long_calls) <= MAX_LONG_CALLS, long_calls
    assert uncommented == [], uncommented


def test_no_function_takes_more_than_nine_parameters_but_the_memorys_writes() -> None:
    """Only ``Memory.__init__`` (the dataclass's), ``put``, ``put_many`` and ``update`` (and the
    constructor of a model with that many declared parameters) take more than 9 parameters."""
    many: list[str] = []
    for path in _modules():
        for name, node in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            if _parameters(node.args) > 9 and name not in MANY_PARAMETERS:
                many.append(f"{path.name}: {name} takes {_parameters(node.args)}")
    assert many == [], many


def test_the_argument_rules_see_what_they_forbid() -> None:
    """The scan counts what the rules say: starred arguments and self/cls not counted."""
    tree = ast.parse(
        "f(1, 2, 3, 4, 5, 6)\nf(1, 2, 3, 4, 5, *rest)\nf(1, 2, 3, 4, 5, k=6)\n"
        "class C:\n"
        "    def m(self, a, b, c, d, e, f, g, h, i): ...\n"
        "    def n(self, a, b, c, d, e, f, g, h, *i, **j): ...\n"
    )
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    assert [_positional(call) for call in calls] == [6, 5, 5]
    assert [(name, _parameters(node.args)) for name, node in _functions(tree)] == [("C.m", 9), ("C.n", 10)]
    assert _comment_lines("x = 1  # why\n'# not a comment'\n# why\n") == {1, 3}
