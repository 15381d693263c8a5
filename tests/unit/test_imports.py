"""Every module imports on its own, no package has an import cycle, and protocol/ imports
nothing in functions.

Each module of the rabbitish package (bridge/ and cli/ under their installed names) is imported
first thing in a fresh interpreter: an import that only works because some other module happened
to be imported before it fails here. On the source, the module-level imports (type-checking ones
aside) of every module form no cycle; in protocol/ no function imports anything either, so
nothing is imported on the per-message path."""

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


def _runtime_imports(
    path: Path, package: str, known: set[str] | None = None
) -> tuple[set[str], list[str]]:
    """Modules `path` imports at module level (outside `if TYPE_CHECKING:`), and the imports
    found inside functions. Given the `known` modules, `from p import m` counts as importing
    module p.m when there is one, and p only when m is a name defined in p."""
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
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    if known is None:
                        imported.update((base, full))
                    else:
                        imported.add(full if full in known else base)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                handlers = [s for h in getattr(node, "handlers", []) for s in h.body]
                visit([*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])])
                visit(handlers)

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
    assert import_cycles(graph) == []
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


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """A cycle through each part of `graph` that has one (depth-first search), as the modules
    along it, the first repeated at the end."""
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

    cycles = []
    for name in sorted(graph):
        if name not in state and (cycle := walk(name)):
            cycles.append(cycle)
            for left in trail:  # the search stopped in the middle: start the next one afresh
                state[left] = 2
            trail.clear()
    return cycles


def source_modules() -> dict[str, tuple[Path, str]]:
    """Every module of every package, optional extras included (read, never imported): its
    source and the package its relative imports start from."""
    modules = {}
    for package, root in PACKAGES.items():
        for source in sorted(root.rglob("*.py")):
            parts = source.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                name = ".".join((package, *parts[:-1]))
                modules[name] = (source, name)
            else:
                name = ".".join((package, *parts))
                modules[name] = (source, name.rpartition(".")[0])
    return modules


def test_no_package_has_an_import_cycle():
    """rabbitish/*, bridge/ and cli/: module-level imports form no cycle (a cycle works only
    while its modules are imported in one order, and is coupling no single import shows)."""
    modules = source_modules()
    assert {"rabbitish.cli.commands", "rabbitish.bridge.session", "rabbitish.spark.broker"} <= (
        modules.keys()
    )
    known = set(modules)
    graph = {}
    for name, (path, package) in modules.items():
        imported, _ = _runtime_imports(path, package, known)
        graph[name] = {m for m in imported if m in known and m != name}
    assert import_cycles(graph) == []


def test_the_cycle_search_finds_a_cycle():
    """Guard against a search that passes everything."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c", "a"]]
