"""Erlang terms as RabbitMQ's error texts print them (io_lib's ``~p`` / ``~tp``, and ``~w`` of a
binary). Frame errors, argument checks, expiration checks and management replies all quote
such terms, so they are printed here, in one place, with one line-breaking rule: a term that
does not fit before column 80 is broken the way Erlang's pretty printer breaks it."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

LINE_LENGTH = 80

_ESCAPES = {8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r", 27: "\\e"}
_ESCAPES |= {34: '\\"', 92: "\\\\"}
_PRINTABLE = frozenset(range(32, 127)) | frozenset(range(160, 256)) | {8, 9, 10, 11, 12, 13, 27}


def column(text: str) -> int:
    """1-based column the next character after `text` lands in, counted in bytes as Erlang
    counts them."""
    return len(text[text.rfind("\n") + 1 :].encode("utf-8", "surrogateescape")) + 1


def fits(flat: str, col: int) -> bool:
    """Whether a term printed flat from column `col` stays on its line."""
    return len(flat) < LINE_LENGTH - col


def binary(data: bytes | str, col: int | None = None) -> str:
    """``~tp`` of a binary: ``<<"text">>`` when every byte is printable latin-1, else the byte
    values ``<<1,2>>``, broken over lines when they do not fit from column `col` (None: the
    caller does not track its column; one line). Bytes above 127 stay bytes (surrogate
    escapes, which the close encoder writes back raw), as RabbitMQ sends them."""
    raw = data.encode() if isinstance(data, str) else data
    if raw and all(b in _PRINTABLE for b in raw):
        chars = "".join(_ESCAPES.get(b) or chr(b) for b in raw)
        return '<<"' + chars.encode("latin-1").decode("utf-8", "surrogateescape") + '">>'
    items = [str(b) for b in raw]
    flat = "<<" + ",".join(items) + ">>"
    if col is None or fits(flat, col):
        return flat
    # As many items per line as fit, continuation lines indented past the "<<".
    width = max(8, min(LINE_LENGTH - (col + 2), len(flat) - 4))
    indent = "\n" + " " * (col + 1)
    out, room = ["<<"], width
    for item in items[:-1]:
        size = len(item) + 1
        if room - size < 0:
            out.append(indent)
            room = width
        out.append(item + ",")
        room -= size
    if len(items[-1]) > room:
        out.append(indent)
    out.append(items[-1] + ">>")
    return "".join(out)


def written_binary(data: bytes) -> str:
    """``~w`` of a binary: always the byte values, on one line."""
    return "<<" + ",".join(map(str, data)) + ">>"


def char_list(text: str) -> str:
    """``~p`` of a string held as a list of characters: quoted when printable ASCII, else the
    character codes."""
    if all(32 <= ord(c) < 127 for c in text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return "[" + ",".join(str(ord(c)) for c in text) + "]"


def float_text(value: float) -> str:
    """``~p`` of a float: shortest digits, ``2.0e3`` for 2000.0."""
    sign, digits_t, exponent = Decimal(repr(value)).normalize().as_tuple()
    digits = "".join(map(str, digits_t)) or "0"
    place = len(digits) + int(exponent)  # value = 0.digits * 10**place
    prefix = "-" if sign else ""
    if digits == "0":
        return prefix + "0.0"
    count = len(digits)
    if 0 < place < count:
        return f"{prefix}{digits[:place]}.{digits[place:]}"
    if place == 0:
        return f"{prefix}0.{digits}"
    exp_text = str(place - 1)
    exp_cost = len(exp_text) + 1 + (2 if count == 1 else 1)
    exp_form = f"{digits[0]}.{digits[1:] or '0'}e{exp_text}"
    if place < 0:
        plain = "0." + "0" * -place + digits
        return prefix + (plain if 2 - place <= exp_cost else exp_form)
    plain = digits + "0" * (place - count) + ".0"
    return prefix + (plain if place - count + 2 <= exp_cost else exp_form)


def term(value: Any) -> str:
    """``~p`` of a decoded field value on one line (strings are binaries in RabbitMQ)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "undefined"
    if isinstance(value, float):
        return float_text(value)
    if isinstance(value, str | bytes):
        return binary(value)
    if isinstance(value, datetime.datetime):
        return str(int(value.timestamp()))
    return str(value)


def tagged(flat: str, col: int) -> str:
    """An atom or a ``{tag,Value}`` tuple printed flat: when the tuple does not fit from column
    `col`, Erlang keeps the tag on this line and moves the value to the next, indented to
    `col`."""
    if not flat.startswith("{") or fits(flat, col):
        return flat
    tag, _, rest = flat.partition(",")
    return f"{tag},\n{' ' * col}{rest}"


def after(prefix: str, flat: str) -> str:
    """`prefix` followed by the tuple `flat`, laid out from the column where `prefix` ends."""
    return prefix + tagged(flat, column(prefix))


def term_list(items: Sequence[str], col: int = 1) -> str:
    """A list of terms printed flat: when it does not fit from column `col`, one element per
    line, indented past the ``[``."""
    flat = "[" + ",".join(items) + "]"
    if fits(flat, col):
        return flat
    return "[" + (",\n" + " " * col).join(items) + "]"
