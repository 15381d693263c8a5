"""Values as rabbitmqctl prints them: its table formatter's `format_info_item` (strings raw,
lists of names in brackets, AMQP tables as Erlang terms `[{"k",v}]`) and its JSON formatter's
shapes (tables as `[key, type, value]` triples). Values come from the management API's JSON, so
an AMQP table's field types are inferred from the JSON types."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\b": "\\b",
    "\f": "\\f",
    "\x1b": "\\e",
}
_UNQUOTED_ATOM = re.compile(r"[a-z][a-zA-Z0-9_@]*\Z")
_INT32 = range(-(2**31), 2**31)


@dataclass(frozen=True)
class Rendered:
    """A value whose two renderings differ in kind (a pid, an address, a map of nodes)."""

    text: str
    json: Any


def _printable(code: int) -> bool:
    """Erlang's latin1 printable range (io:printable_range() by default)."""
    return 32 <= code <= 126 or 160 <= code <= 255 or chr(code) in _ESCAPES


def erlang_string(text: str) -> str:
    """A string as `~tp` prints a charlist: quoted when printable, else a list of codes."""
    codes = [ord(c) for c in text]
    if not codes:
        return "[]"
    if all(_printable(c) for c in codes):
        return '"' + "".join(_ESCAPES.get(c, c) for c in text) + '"'
    return "[" + ",".join(map(str, codes)) + "]"


def erlang_atom(name: str) -> str:
    """An atom as `~p` prints it: quoted unless it is a plain lower-case name."""
    if _UNQUOTED_ATOM.match(name):
        return name
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"


def erlang_float(value: float) -> str:
    """Erlang's shortest float form: 1.0, 0.5, 1.0e-5, 1.5e16."""
    text = repr(value)
    if "e" not in text:
        return text if "." in text else text + ".0"
    mantissa, exponent = text.split("e")
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}e{int(exponent)}"


def term(value: Any) -> str:
    """A value inside an AMQP table, as `~tp` prints the CLI's prettified table."""
    if value is None:
        return "undefined"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return erlang_float(value)
    if isinstance(value, str):
        return erlang_string(value)
    if isinstance(value, dict):
        return "[" + ",".join(f"{{{erlang_string(k)},{term(v)}}}" for k, v in value.items()) + "]"
    if isinstance(value, list):
        return "[" + ",".join(term(v) for v in value) + "]"
    return str(value)


def info_item(value: Any) -> str:
    """One cell of the table and CSV formatters."""
    if isinstance(value, Rendered):
        return value.text
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return erlang_float(value)
    if isinstance(value, list):
        return "[" + ", ".join(info_item(v) for v in value) + "]"
    return term(value)


def _amqp_type(value: Any) -> str:
    if value is None:
        return "void"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "signedint" if value in _INT32 else "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, dict):
        return "table"
    if isinstance(value, list):
        return "array"
    return "longstr"


def _typed(value: Any) -> Any:
    if isinstance(value, dict):
        return [[k, _amqp_type(v), _typed(v)] for k, v in value.items()]
    if isinstance(value, list):
        return {_amqp_type(v): _typed(v) for v in value}
    return value


def json_item(value: Any) -> Any:
    """One value of the JSON formatter: tables as `[key, type, value]` triples."""
    if isinstance(value, Rendered):
        return value.json
    if value is None:
        return ""
    if isinstance(value, dict):
        return _typed(value)
    return value


def json_line(row: dict[str, Any]) -> str:
    """One compact JSON object, as the CLI's JSON formatter writes each row."""
    return json.dumps(row, separators=(",", ":"), ensure_ascii=False)
