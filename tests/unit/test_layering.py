"""Dependencies point one way: the protocol stays sans-IO, the engine knows no wire format, no
I/O and no storage, and what both front ends share (rabbitish/frontend) sits between them and
the engine, sans-IO too. Checked on the source with ast, so a lazy import inside a function
counts."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "rabbitish"
FRONT_ENDS = ("rabbitish.protocol", "rabbitish.bridge", "rabbitish.server")

# Folder (relative to the repository) -> modules it must never import. The engine knows no
# front end, wire format, I/O or storage; management and the 1.0 bridge reach 0-9-1 only
# through the engine's neutral API. The shared front-end mechanics know neither protocol nor
# the I/O layer, and the engine below them knows nothing of them.
FORBIDDEN = {
    "rabbitish/protocol": ("asyncio",),
    "rabbitish/engine": (
        "pamqp",
        "asyncio",
        "sqlite3",
        "aiosqlite",
        "aiohttp",
        "rabbitish.store",
        "rabbitish.management",
        "rabbitish.cli",
        "rabbitish.frontend",
        *FRONT_ENDS,
    ),
    "rabbitish/frontend": (
        "pamqp",
        "asyncio",
        "sqlite3",
        "aiosqlite",
        "aiohttp",
        "rabbitish.store",
        "rabbitish.management",
        "rabbitish.cli",
        *FRONT_ENDS,
    ),
    "rabbitish/management": ("rabbitish.protocol", "rabbitish.bridge", "pamqp"),
    "bridge": ("rabbitish.protocol",),
}
# Where each folder is installed (bridge/ and cli/ live in the rabbitish namespace).
INSTALLED_AS = {"bridge": "rabbitish.bridge"}


def imported_modules(source: str, package: str) -> set[str]:
    """Every module an import statement in `source` names (relative ones resolved against
    `package`), wherever the statement sits."""
    tree = ast.parse(source)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _violations(layer: str) -> list[str]:
    bad = []
    folder = ROOT / layer
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(folder).parts[:-1]
        package = ".".join([INSTALLED_AS.get(layer, layer.replace("/", ".")), *parts])
        for module in imported_modules(path.read_text(), package):
            for banned in FORBIDDEN[layer]:
                if module == banned or module.startswith(banned + "."):
                    bad.append(f"{path.relative_to(ROOT)} imports {module}")
    return bad


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_nothing_forbidden(layer):
    assert (ROOT / layer).is_dir()
    assert _violations(layer) == []


def test_the_checker_sees_lazy_and_relative_imports():
    """Guard against a checker that silently passes everything."""
    source = (
        "import os\n"
        "def later():\n"
        "    import asyncio\n"
        "    from ..protocol import channel\n"
        "    from . import queue\n"
        "    from pamqp.commands import Basic\n"
    )
    found = imported_modules(source, "rabbitish.engine")
    assert {"os", "asyncio", "rabbitish.protocol", "rabbitish.engine.queue", "pamqp.commands"} <= (
        found
    )
