"""Unit tests are found where the code they test is: tests/unit/engine/test_queue.py tests
rabbitish/engine/queue.py, tests/unit/bridge/test_session.py tests bridge/session.py,
tests/unit/cli/test_serve.py tests cli/serve.py. A file may add an aspect after the module's
name (test_connection_close_paths.py tests connection.py). Only the checks of the whole tree sit
at tests/unit/ itself.

Engine unit tests drive the engine through its own interfaces: they import no front end and no
wire codec (tests/support/engine.py has an engine-level PropertyCodec for them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_layering import imported_modules

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "tests" / "unit"

# The first folder under tests/unit/ -> the source folder it mirrors (bridge/ and cli/ are
# installed as rabbitish.bridge and rabbitish.cli); any other folder mirrors rabbitish/<folder>.
SOURCE_ROOTS = {"bridge": ROOT / "bridge", "cli": ROOT / "cli"}

# Tests of the whole tree rather than of one module.
CROSS_CUTTING = {
    "test_layering.py": "dependencies point one way, checked on every module's source",
    "test_imports.py": "every module imports alone; no import cycle",
    "test_layout.py": "this file: the tests' own layout",
    "test_contract_boundaries.py": (
        "layers meet through typed interfaces: no attribute probing and no reading of another"
        " package's private names"
    ),
}

# tests/unit/<path> -> why it names no module. Keep this short: a test that fits no module
# usually tests a module under another name, and should be renamed instead.
EXCEPTIONS: dict[str, str] = {}

# Files in tests/unit/ that are not tests: package markers, fixtures and shared harnesses.
NOT_TESTS = {"__init__.py", "conftest.py", "harness.py"}

# What engine unit tests must not import, directly or through the test helpers they use.
ENGINE_TESTS_MUST_NOT_IMPORT = ("rabbitish.protocol", "rabbitish.bridge", "pamqp")


def source_folder(test_folder: Path) -> Path:
    """The source folder a folder under tests/unit/ mirrors."""
    parts = test_folder.relative_to(UNIT).parts
    if not parts:
        return ROOT / "rabbitish"
    base = SOURCE_ROOTS.get(parts[0], ROOT / "rabbitish" / parts[0])
    return base.joinpath(*parts[1:])


def module_named_by(test_file: Path) -> Path | None:
    """The module `test_file` names (test_<module>.py or test_<module>_<aspect>.py), or None."""
    folder = source_folder(test_file.parent)
    words = test_file.stem.removeprefix("test_").split("_")
    for end in range(len(words), 0, -1):
        name = "_".join(words[:end])
        for candidate in (folder / f"{name}.py", folder / name / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def unit_test_files() -> list[Path]:
    return sorted(p for p in UNIT.rglob("test_*.py") if "__pycache__" not in p.parts)


def test_every_unit_test_names_the_module_it_tests():
    unplaced = []
    for path in unit_test_files():
        relative = path.relative_to(UNIT).as_posix()
        if relative in CROSS_CUTTING or relative in EXCEPTIONS:
            continue
        if module_named_by(path) is None:
            unplaced.append(f"tests/unit/{relative}: no module {source_folder(path.parent)}")
    assert unplaced == []


def test_the_exceptions_are_still_needed():
    for relative in EXCEPTIONS:
        path = UNIT / relative
        assert path.is_file(), f"{relative} is gone: drop it from EXCEPTIONS"
        assert module_named_by(path) is None, f"{relative} names a module now: drop the exception"
    for name in CROSS_CUTTING:
        assert (UNIT / name).is_file()


def test_only_tests_and_their_helpers_live_in_tests_unit():
    strays = [
        p.relative_to(UNIT).as_posix()
        for p in UNIT.rglob("*.py")
        if "__pycache__" not in p.parts
        and not p.name.startswith("test_")
        and p.name not in NOT_TESTS
    ]
    assert strays == []


def test_every_test_folder_mirrors_a_source_folder_and_is_an_empty_package():
    """Empty __init__.py files: branches that add the same folder then merge cleanly."""
    problems = []
    for folder in sorted(p for p in UNIT.rglob("*") if p.is_dir() and p.name != "__pycache__"):
        name = f"tests/unit/{folder.relative_to(UNIT).as_posix()}"
        if not source_folder(folder).is_dir():
            problems.append(f"{name} mirrors no folder ({source_folder(folder)})")
        marker = folder / "__init__.py"
        if not marker.is_file() or marker.stat().st_size:
            problems.append(f"{name}/__init__.py is missing or not empty")
    assert problems == []


def test_the_layout_check_can_fail():
    """Guard against a check that silently passes everything."""
    assert module_named_by(UNIT / "engine" / "test_queue.py") == ROOT / "rabbitish/engine/queue.py"
    assert module_named_by(UNIT / "engine" / "test_queue_drain.py") == (
        ROOT / "rabbitish/engine/queue.py"
    )
    assert module_named_by(UNIT / "bridge" / "codec" / "test_framing.py") == (
        ROOT / "bridge/codec/framing.py"
    )
    assert module_named_by(UNIT / "cli" / "test_serve.py") == ROOT / "cli/serve.py"
    assert module_named_by(UNIT / "test_tls.py") == ROOT / "rabbitish/tls.py"
    assert module_named_by(UNIT / "engine" / "test_framing.py") is None
    assert module_named_by(UNIT / "test_queue.py") is None
    assert module_named_by(UNIT / "protocol" / "test_nothing_here.py") is None


# ---------------------------------------------------------------------- engine tests
def _module_file(module: str) -> Path | None:
    """The file of a module of the tests package, or None for any other module."""
    if module != "tests" and not module.startswith("tests."):
        return None
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def forbidden_imports(path: Path, banned: tuple[str, ...]) -> list[str]:
    """Imports of `banned` modules by `path` or by any test helper it imports, transitively."""
    found: list[str] = []
    seen: set[Path] = set()
    todo = [path]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        package = ".".join(current.relative_to(ROOT).with_suffix("").parts[:-1])
        for module in sorted(imported_modules(current.read_text(), package)):
            if any(module == b or module.startswith(b + ".") for b in banned):
                found.append(f"{current.relative_to(ROOT)} imports {module}")
            helper = _module_file(module)
            if helper is not None:
                todo.append(helper)
    return found


ENGINE_TESTS = sorted((UNIT / "engine").rglob("*.py"))


@pytest.mark.parametrize("path", ENGINE_TESTS, ids=lambda p: p.relative_to(UNIT).as_posix())
def test_engine_tests_import_no_front_end_and_no_wire_codec(path: Path):
    assert forbidden_imports(path, ENGINE_TESTS_MUST_NOT_IMPORT) == []


def test_the_engine_test_check_follows_helpers():
    """A helper in tests/ that imports the 0-9-1 codec counts against the test importing it."""
    assert ENGINE_TESTS, "no engine unit tests found"
    protocol_tests = UNIT / "protocol" / "test_connection.py"
    found = forbidden_imports(protocol_tests, ENGINE_TESTS_MUST_NOT_IMPORT)
    assert any("tests/unit/harness.py imports rabbitish.protocol" in f for f in found)
    assert any("pamqp" in f for f in found)
