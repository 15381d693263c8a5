"""Every module imports on its own, and protocol/ has no import cycle.

Each module of the rabbitish package (bridge/ and cli/ under their installed names) is imported
first thing in a fresh interpreter: an import that only works because some other module happened
to be imported before it fails here. protocol/ is also checked on the source: its module-level
imports (type-checking ones aside) form no cycle, and no function imports anything, so nothing
is imported on the per-message path."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "rabbitish": ROOT / "rabbitish",
    "rabbitish.bridge": ROOT / "bridge",
    "rabbitish.cli": ROOT / "cli",
}

# Subpackages of an optional extra, and the module that extra installs: without it they cannot
# be imported at all, so they are checked only where it is installed.
EXTRAS = {"rabbitish.spark": "pyspark"}


def module_names() -> list[str]:
    names = []
    for package, path in PACKAGES.items():
        for source in sorted(path.rglob("*.py")):
            parts = source.relative_to(path).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            names.append(".".join((package, *parts)))
    missing = [sub for sub, dep in EXTRAS.items() if importlib.util.find_spec(dep) is None]
    return [n for n in names if not any(n == m or n.startswith(m + ".") for m in missing)]


def _import_alone(name: str) -> tuple[str, int, str]:
    done = subprocess.run(
        [sys.executable, "-c", f"import {name}"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    return name, done.returncode, done.stderr[-2000:]


def test_every_module_imports_alone_in_a_fresh_interpreter():
    names = module_names()
    assert "rabbitish.protocol.channel" in names and "rabbitish.cli.main" in names
    with ThreadPoolExecutor(max(2, (os.cpu_count() or 2) * 2)) as pool:
        failed = {name: err for name, code, err in pool.map(_import_alone, names) if code}
    assert failed == {}


def _runtime_imports(path: Path, package: str) -> tuple[set[str], list[str]]:
    """Modules `path` imports at module level (outside `if TYPE_CHECKING:`), and the imports
    found inside functions."""
    tree = ast.parse(path.read_text())
    imported: set[str] = set()
    nested: list[str] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join([*parts[: len(parts) - node.level + 1], base]).rstrip(".")
                imported.add(base)
                imported.update(f"{base}.{alias.name}" for alias in node.names)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                visit([*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])])

    visit(tree.body)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    nested.append(f"{path.name}:{inner.lineno} in {node.name}()")
    return imported, nested


def test_protocol_has_no_import_cycle_and_no_imports_in_functions():
    protocol = ROOT / "rabbitish" / "protocol"
    modules = {
        f"rabbitish.protocol.{p.stem}": p for p in protocol.glob("*.py") if p.stem != "__init__"
    }
    graph: dict[str, set[str]] = {}
    all_nested: list[str] = []
    for name, path in modules.items():
        imported, nested = _runtime_imports(path, "rabbitish.protocol")
        graph[name] = {m for m in imported if m in modules and m != name}
        all_nested += nested
    assert all_nested == []

    # Depth-first search for a cycle.
    state: dict[str, int] = {}
    trail: list[str] = []

    def walk(name: str) -> list[str] | None:
        state[name] = 1
        trail.append(name)
        for dep in sorted(graph[name]):
            if state.get(dep) == 1:
                return [*trail[trail.index(dep) :], dep]
            if dep not in state and (cycle := walk(dep)):
                return cycle
        state[name] = 2
        trail.pop()
        return None

    cycles = [cycle for name in sorted(graph) if name not in state and (cycle := walk(name))]
    assert cycles == []
    # The shape this relies on: channel.py knows no handler module; dispatch.py knows them all.
    assert not graph["rabbitish.protocol.channel"] & {
        "rabbitish.protocol.basic",
        "rabbitish.protocol.tx",
        "rabbitish.protocol.wiring",
        "rabbitish.protocol.dispatch",
    }
    assert {"rabbitish.protocol.basic", "rabbitish.protocol.tx", "rabbitish.protocol.wiring"} <= (
        graph["rabbitish.protocol.dispatch"]
    )
