"""Layers meet through typed interfaces (engine/sessions.py's `FrontEndConnection` for client
connections), never by probing: checked on the source of every module of rabbitish/, bridge/
and cli/ with ast.

(a) No `getattr` / `hasattr` naming an attribute with a string constant: that is asking an
    object of unknown type whether it has something, where a typed interface should say so.
    (A name computed at run time, such as a loop over a class's fields, is reflection and
    allowed.)
(b) No private attribute of another package's object: `x._name` where `x` is not `self`,
    `cls` or `super()`, and no `from module import _name`, when `_name` is defined in another
    of our packages (rabbitish.management, rabbitish.protocol, rabbitish.bridge, ...; the
    top-level modules such as app.py form the package `rabbitish`) and nowhere in the reader's
    own. A private name may be shared inside its package. A library's private attributes
    (pika's in the Spark connector, a namedtuple's `_replace`) are not ours to police here."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("rabbitish", "bridge", "cli")
INSTALLED_AS = {"bridge": "rabbitish.bridge", "cli": "rabbitish.cli"}
PROBES = ("getattr", "hasattr")

# (module, attribute) -> why a probe by that constant name is right there. Keep this tiny.
ALLOWED_PROBES = {
    ("rabbitish/sysinfo.py", "sysconf"): "the platform's os module: not every OS has sysconf",
    ("cli/docs.py", "help"): "typer's click objects: only typer's arguments carry help text",
    ("cli/docs.py", "list_commands"): "typer's click objects: typer vendors click, so its "
    "Group class cannot be imported to test against",
    ("bridge/codec/definitions.py", "AMQP_TYPE"): "the codec's type-name marker, set on value "
    "classes of unrelated bases (error messages for any decoded value)",
    ("bridge/typed_values.py", "AMQP_TYPE"): "the same marker, naming any decoded value's type",
}


@dataclass(frozen=True)
class Module:
    path: str  # relative to the repository, e.g. "rabbitish/management/server.py"
    package: str  # e.g. "rabbitish.management"
    tree: ast.Module


def package_of(path: str) -> str:
    """The package a module belongs to for rule (b): the first level under rabbitish (bridge/
    and cli/ are installed as rabbitish.bridge and rabbitish.cli); top-level modules form
    `rabbitish`."""
    parts = path.split("/")
    top = INSTALLED_AS.get(parts[0], parts[0])
    if parts[0] != "rabbitish" or len(parts) == 2:
        return top
    return f"{top}.{parts[1]}"


def module_package(module: str) -> str:
    """The package of a dotted module name (`rabbitish.protocol.connection`)."""
    parts = module.split(".")
    if parts[0] != "rabbitish":
        return parts[0]
    return (
        ".".join(parts[:2]) if len(parts) > 2 or parts[1:] in (["bridge"], ["cli"]) else "rabbitish"
    )


def load(folders: tuple[str, ...] = FOLDERS) -> list[Module]:
    found = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            found.append(Module(rel, package_of(rel), ast.parse(path.read_text(), rel)))
    return found


# A namedtuple's public methods, underscored so they cannot clash with its fields.
NAMEDTUPLE_API = frozenset({"_asdict", "_field_defaults", "_fields", "_make", "_replace"})


def _private(name: str) -> bool:
    dunder = name.startswith("__") and name.endswith("__")
    return name.startswith("_") and not dunder and name not in NAMEDTUPLE_API


# ---------------------------------------------------------------------- (a) probing
def probe_calls(module: Module) -> Iterator[tuple[int, str, str]]:
    """(line, "getattr" or "hasattr", attribute) of each probe by a string constant."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) >= 2:
            name = node.args[1]
            constant = isinstance(name, ast.Constant) and isinstance(name.value, str)
            if node.func.id in PROBES and constant:
                yield node.lineno, node.func.id, name.value


def probes(module: Module) -> Iterator[str]:
    """`getattr(x, "name"...)` and `hasattr(x, "name")` calls not in ALLOWED_PROBES."""
    for line, func, name in probe_calls(module):
        if (module.path, name) not in ALLOWED_PROBES:
            yield f"{module.path}:{line} {func}(..., {name!r})"


# ---------------------------------------------------------------------- (b) private reads
def defined_private_names(module: Module) -> set[str]:
    """The private names a module defines: functions, classes, module and class attributes,
    attributes it sets on self/cls, `__slots__` entries and import aliases."""
    names: set[str] = set()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                names.add(node.attr)
        elif isinstance(node, ast.alias) and node.asname:
            names.add(node.asname)
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets
        ):
            for item in ast.walk(node.value):
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    names.add(item.value)
    return {name for name in names if _private(name)}


def _own(value: ast.expr) -> bool:
    """`self`, `cls` or `super()`: the object's own attributes."""
    if isinstance(value, ast.Name):
        return value.id in ("self", "cls")
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "super"
    )


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.path.removesuffix(".py").split("/")[:-1]
    dotted = [INSTALLED_AS.get(package[0], package[0]).split(".")[-1], *package[1:]]
    if dotted[0] != "rabbitish":
        dotted.insert(0, "rabbitish")
    base = dotted[: len(dotted) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def private_reads(module: Module, defined: dict[str, set[str]]) -> Iterator[str]:
    """Private attributes read off objects other than self/cls, and private names imported
    from another package, that another of our packages defines and the module's own does not."""
    own = defined.get(module.package, set())
    others = set().union(
        *(names for package, names in defined.items() if package != module.package)
    )
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and not _own(node.value):
            if node.attr in others and node.attr not in own:
                yield f"{module.path}:{node.lineno} .{node.attr}"
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            if module_package(source) == module.package:
                continue
            for alias in node.names:
                if _private(alias.name):
                    yield f"{module.path}:{node.lineno} from {source} import {alias.name}"


def private_names_by_package(modules: list[Module]) -> dict[str, set[str]]:
    defined: dict[str, set[str]] = {}
    for module in modules:
        defined.setdefault(module.package, set()).update(defined_private_names(module))
    return defined


# ---------------------------------------------------------------------- the checks
def test_no_module_probes_attributes_by_name():
    assert [hit for module in load() for hit in probes(module)] == []


def test_no_module_reads_another_packages_private_attributes():
    modules = load()
    defined = private_names_by_package(modules)
    assert [hit for module in modules for hit in private_reads(module, defined)] == []


def test_every_allowed_probe_is_still_there():
    """An exception nobody needs any more goes from the list."""
    used = {(module.path, name) for module in load() for _, _, name in probe_calls(module)}
    assert set(ALLOWED_PROBES) <= used


def _synthetic(path: str, source: str) -> Module:
    return Module(path, package_of(path), ast.parse(source))


def test_the_checker_catches_synthetic_violations():
    """Guard against a checker that silently passes everything."""
    reader = _synthetic(
        "rabbitish/management/example.py",
        "from rabbitish.protocol.connection import _ACTIONS\n"
        "from rabbitish.management.format import _private_helper\n"
        "def endpoint(proto, conn, pika_conn):\n"
        "    peer = getattr(proto, 'transport', None)\n"
        "    if hasattr(conn, 'vhost'):\n"
        "        return proto._reads, self._ok, conn._shared, getattr(conn, name)\n"
        "    return super()._reads, pika_conn._impl\n",
    )
    shared = _synthetic("rabbitish/management/format.py", "class F:\n    _shared = 1\n")
    server = _synthetic(
        "rabbitish/server/socket_protocol.py",
        "class P:\n    def __init__(self):\n        self._reads = 0\n        self._shared = 0\n",
    )
    defined = private_names_by_package([reader, shared, server])
    assert [hit.split(" ", 1)[1] for hit in probes(reader)] == [
        "getattr(..., 'transport')",
        "hasattr(..., 'vhost')",
    ]
    assert [hit.split(" ", 1)[1] for hit in private_reads(reader, defined)] == [
        "from rabbitish.protocol.connection import _ACTIONS",
        "._reads",
    ]


def test_packages_are_named_by_their_first_level():
    assert package_of("rabbitish/management/sessions.py") == "rabbitish.management"
    assert package_of("rabbitish/app.py") == "rabbitish"
    assert package_of("bridge/codec/values.py") == "rabbitish.bridge"
    assert package_of("cli/serve.py") == "rabbitish.cli"
    assert module_package("rabbitish.protocol.connection") == "rabbitish.protocol"
    assert module_package("rabbitish.bridge") == "rabbitish.bridge"
    assert module_package("rabbitish.app") == "rabbitish"
    assert module_package("aiohttp.web") == "aiohttp"
