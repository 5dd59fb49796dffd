"""``lethe simulate``: each malformed log line is refused in one line on stderr naming it, never a traceback."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lethe._cli import SIMULATE_LOG_FORMAT, main

PUT = '{"t": 0, "op": "put", "key": "a", "value": 1}'


def simulate(capsys: pytest.CaptureFixture[str], path: Path, *args: str) -> tuple[int, str, str]:
    status = main(["simulate", str(path), *args])
    out, err = capsys.readouterr()
    return status, out, err


def refused(capsys: pytest.CaptureFixture[str], path: Path, *args: str) -> str:
    """The one error line ``simulate`` wrote for ``path``."""
    status, out, err = simulate(capsys, path, *args)
    assert status == 2, err
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    return err


def log(tmp_path: Path, *lines: str | bytes) -> Path:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join((line if isinstance(line, bytes) else line.encode()) + b"\n" for line in lines))
    return path


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_a_line_nested_past_what_json_reads_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = log(tmp_path, PUT, f'{{"t": 1, "op": "put", "value": {nested(100_000)}}}')
    assert f"{path}:2: not valid JSON: nested too deeply" in refused(capsys, path)


@pytest.mark.parametrize(
    ("line", "name"),
    [
        (f'{{"t": 1, "op": "put", "value": {nested(101)}}}', "value"),
        (f'{{"t": 1, "op": "update", "key": "a", "value": {{"x": {nested(300)}}}}}', "value"),
        (f'{{"t": 1, "op": "put", "value": 1, "metadata": {{"x": {nested(100)}}}}}', "metadata"),
    ],
)
def test_a_field_nested_past_the_limit_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, name: str
) -> None:
    path = log(tmp_path, PUT, line)
    assert f"{path}:2: {name}: nested deeper than 100 levels" in refused(capsys, path)


def test_a_field_nested_to_the_limit_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = log(tmp_path, f'{{"t": 0, "op": "put", "value": {nested(100)}, "metadata": {{"x": {nested(99)}}}}}')
    status, out, err = simulate(capsys, path, "--json")
    assert (status, err) == (0, "")
    assert json.loads(out)["counts"]["kept"] == 1


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ('{"t": 1, "op": "put", "key": 1e400, "value": 1}', "key"),
        ('{"t": 1, "op": "put", "key": -1e400, "value": 1}', "key"),
        ('{"t": 1, "op": "put", "key": "k", "value": [1, 1e400]}', "value"),
        ('{"t": 1, "op": "update", "key": "a", "value": {"x": 1e999}}', "value"),
        ('{"t": 1, "op": "put", "key": "k", "value": 1, "metadata": {"x": 1e400}}', "metadata"),
        ('{"t": 1, "op": "touch", "key": "a", "importance": 1e400}', "importance"),
        ('{"t": 1e400, "op": "put", "value": 1}', "t"),
        # 400 digits and a fraction overflow a float without an exponent.
        ('{"t": 1, "op": "put", "key": 1' + "0" * 400 + '.0, "value": 1}', "key"),
    ],
)
def test_a_number_too_large_for_a_float_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, name: str
) -> None:
    path = log(tmp_path, PUT, line)
    assert f"{path}:2: {name}: must be finite" in refused(capsys, path, "--json")


def test_the_json_report_of_large_numbers_is_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = log(
        tmp_path, '{"t": 0, "op": "put", "key": 1e300, "value": [1e308, -1e308, 123456789012345678901234567890]}'
    )
    status, out, err = simulate(capsys, path, "--json")
    assert (status, err) == (0, "")
    doc = json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} in the --json report"))
    assert doc["kept"][0]["key"] == 1e300


def test_a_line_that_is_not_utf8_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = log(tmp_path, PUT, '{"t": 1, "op": "put", "value": 1}', b"\xff", PUT)
    err = refused(capsys, path)
    assert f"{path}:3: not UTF-8 (" in err
    assert "0xff" in err
    # A bad byte inside a string, past the first lines' buffer, is named by its line too.
    path = log(tmp_path, *[PUT] * 5000, b'{"t": 1, "op": "put", "value": "caf\xe9"}')
    assert f"{path}:5001: not UTF-8 (" in refused(capsys, path)


def test_utf8_text_and_windows_line_ends_are_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = log(tmp_path, '{"t": 0, "op": "put", "key": "café ☕", "value": "naïve"}\r', PUT + "\r")
    status, out, err = simulate(capsys, path, "--json")
    assert (status, err) == (0, "")
    assert {k["key"] for k in json.loads(out)["kept"]} == {"café ☕", "a"}


@pytest.mark.parametrize(
    ("line", "name", "op"),
    [
        ('{"t": 1, "op": "get", "key": "a", "pinned": true, "value": 5, "metadata": 3}', "metadata", "get"),
        ('{"t": 1, "op": "get", "key": "a", "value": 5}', "value", "get"),
        ('{"t": 1, "op": "touch", "key": "a", "pinned": false}', "pinned", "touch"),
        ('{"t": 1, "op": "update", "key": "a", "value": 2, "importance": 3}', "importance", "update"),
        ('{"t": 1, "op": "pin", "key": "a", "value": 3}', "value", "pin"),
        ('{"t": 1, "op": "unpin", "key": "a", "metadata": {}}', "metadata", "unpin"),
        ('{"t": 1, "op": "delete", "key": "a", "importance": 3}', "importance", "delete"),
        ('{"t": 1, "op": "evict", "key": "a"}', "key", "evict"),
        ('{"t": 1, "op": "evict", "key": null}', "key", "evict"),
    ],
)
def test_a_field_its_op_does_not_take_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, name: str, op: str
) -> None:
    path = log(tmp_path, PUT, line)
    assert f"{path}:2: {name}: not taken by op {op!r}" in refused(capsys, path)


def test_every_field_an_op_takes_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = log(
        tmp_path,
        '{"t": 0, "op": "put", "key": "a", "value": 1, "importance": 2, "pinned": false, "metadata": {"m": 1}}',
        '{"t": 1, "op": "get", "key": "a", "importance": 1}',
        '{"t": 2, "op": "touch", "key": "a", "importance": 1}',
        '{"t": 3, "op": "update", "key": "a", "value": 2}',
        '{"t": 4, "op": "pin", "key": "a"}',
        '{"t": 5, "op": "unpin", "key": "a"}',
        '{"t": 6, "op": "evict"}',
        '{"t": 7, "op": "delete", "key": "a"}',
    )
    status, out, err = simulate(capsys, path, "--json")
    assert (status, err) == (0, "")
    assert json.loads(out)["misses"] == 0


def test_the_help_names_the_fields_each_op_takes() -> None:
    from lethe._cli._simulate import EVENT_FIELDS, OP_FIELDS

    for op, fields in OP_FIELDS.items():
        (line,) = [line for line in SIMULATE_LOG_FORMAT.splitlines() if line.split()[:1] == [op]]
        assert set(re.findall(r"\w+", line)) & EVENT_FIELDS == fields, op


def test_an_unknown_model_names_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(capsys, log(tmp_path, PUT), "--model", "nope")
    assert "--model" in err
    assert "nope" in err
