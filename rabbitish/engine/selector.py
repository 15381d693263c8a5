"""JMS message selectors: the SQL-92 conditional subset JMS defines (comparisons, AND / OR / NOT
with three-valued logic, BETWEEN, IN, LIKE with ESCAPE, IS [NOT] NULL, arithmetic), parsed once
into a tree of nodes and evaluated by a small interpreter over a lookup of identifier values.

Protocol-neutral on purpose: the AMQP 1.0 selector filter and 0-9-1's `x-selector` consumer
argument both compile here. The JMS header names (`JMSPriority`, `JMSType`, ...) are read from
the engine's `PropertyCodec.to_fields` view of a message (`jms_header`); a front end may overlay
the names its own wire format holds more exactly (AMQP 1.0's subject, millisecond times)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from rabbitish.engine.message import FieldValue, Message, QueueEntry

Lookup = Callable[[str], Any]  # an identifier's value: bool, int, float, str or None (NULL)

KEYWORDS = frozenset(
    ("AND", "OR", "NOT", "BETWEEN", "IN", "LIKE", "ESCAPE", "IS", "NULL", "TRUE", "FALSE")
)
# JMS header fields a selector may name, and JMSX properties rabbitish can answer.
JMS_NAMES = frozenset(
    (
        *("JMSDeliveryMode", "JMSPriority", "JMSMessageID", "JMSTimestamp"),
        *("JMSCorrelationID", "JMSType", "JMSExpiration"),
        *("JMSXUserID", "JMSXDeliveryCount", "JMSXGroupID", "JMSXGroupSeq"),
    )
)
DEFAULT_PRIORITY = 4  # AMQP 1.0's header default, and JMS's


class SelectorError(ValueError):
    """A selector that does not parse; `position` is the 1-based column of the fault."""

    def __init__(self, reason: str, position: int) -> None:
        super().__init__(f"{reason} at column {position}")
        self.reason = reason
        self.position = position


# ---------------------------------------------------------------------- tokens
_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>'(?:[^']|'')*')
  | (?P<ident>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<op><>|<=|>=|[=<>+\-*/(),])
    """,
    re.VERBOSE,
)


class _Token:
    __slots__ = ("kind", "position", "text", "value")

    def __init__(self, kind: str, text: str, value: Any, position: int) -> None:
        self.kind = kind  # number, string, ident, keyword, op, end
        self.text = text
        self.value = value
        self.position = position  # 1-based column


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            if text[pos] == "'":
                raise SelectorError("unterminated string literal", pos + 1)
            raise SelectorError(f"unexpected character {text[pos]!r}", pos + 1)
        kind = match.lastgroup
        word = match.group()
        if kind == "number":
            exact = not any(c in word for c in ".eE")
            out.append(_Token("number", word, int(word) if exact else float(word), pos + 1))
        elif kind == "string":
            out.append(_Token("string", word, word[1:-1].replace("''", "'"), pos + 1))
        elif kind == "ident":
            upper = word.upper()
            if upper in KEYWORDS:
                out.append(_Token("keyword", upper, None, pos + 1))
            else:
                out.append(_Token("ident", word, word, pos + 1))
        elif kind == "op":
            out.append(_Token("op", word, None, pos + 1))
        pos = match.end()
    out.append(_Token("end", "", None, len(text) + 1))
    return out


# ---------------------------------------------------------------------- the tree
class Node:
    """One node of a parsed selector; `evaluate` gives a value, None being SQL's NULL /
    UNKNOWN."""

    __slots__ = ()

    def evaluate(self, lookup: Lookup) -> Any:
        raise NotImplementedError


class Literal(Node):
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def evaluate(self, lookup: Lookup) -> Any:
        return self.value


class Identifier(Node):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def evaluate(self, lookup: Lookup) -> Any:
        return lookup(self.name)


class Not(Node):
    __slots__ = ("operand",)

    def __init__(self, operand: Node) -> None:
        self.operand = operand

    def evaluate(self, lookup: Lookup) -> bool | None:
        value = _truth(self.operand.evaluate(lookup))
        return None if value is None else not value


class And(Node):
    __slots__ = ("left", "right")

    def __init__(self, left: Node, right: Node) -> None:
        self.left, self.right = left, right

    def evaluate(self, lookup: Lookup) -> bool | None:
        left = _truth(self.left.evaluate(lookup))
        if left is False:
            return False
        right = _truth(self.right.evaluate(lookup))
        if right is False:
            return False
        return None if left is None or right is None else True


class Or(Node):
    __slots__ = ("left", "right")

    def __init__(self, left: Node, right: Node) -> None:
        self.left, self.right = left, right

    def evaluate(self, lookup: Lookup) -> bool | None:
        left = _truth(self.left.evaluate(lookup))
        if left is True:
            return True
        right = _truth(self.right.evaluate(lookup))
        if right is True:
            return True
        return None if left is None or right is None else False


class Compare(Node):
    __slots__ = ("left", "op", "right")

    def __init__(self, op: str, left: Node, right: Node) -> None:
        self.op, self.left, self.right = op, left, right

    def evaluate(self, lookup: Lookup) -> bool | None:
        return compare(self.op, self.left.evaluate(lookup), self.right.evaluate(lookup))


class Arithmetic(Node):
    __slots__ = ("left", "op", "right")

    def __init__(self, op: str, left: Node, right: Node) -> None:
        self.op, self.left, self.right = op, left, right

    def evaluate(self, lookup: Lookup) -> int | float | None:
        left, right = _number(self.left.evaluate(lookup)), _number(self.right.evaluate(lookup))
        if left is None or right is None:
            return None
        op = self.op
        if op == "+":
            return left + right
        if op == "-":
            return left - right
        if op == "*":
            return left * right
        if right == 0:
            return None  # division by zero: unknown, never an exception mid-dispatch
        if isinstance(left, int) and isinstance(right, int):
            quotient = abs(left) // abs(right)  # Java's long division truncates toward zero
            return quotient if (left < 0) == (right < 0) else -quotient
        return left / right


class Negate(Node):
    __slots__ = ("operand",)

    def __init__(self, operand: Node) -> None:
        self.operand = operand

    def evaluate(self, lookup: Lookup) -> int | float | None:
        value = _number(self.operand.evaluate(lookup))
        return None if value is None else -value


class Between(Node):
    __slots__ = ("high", "low", "negated", "operand")

    def __init__(self, operand: Node, low: Node, high: Node, negated: bool) -> None:
        self.operand, self.low, self.high, self.negated = operand, low, high, negated

    def evaluate(self, lookup: Lookup) -> bool | None:
        value = self.operand.evaluate(lookup)
        low = compare(">=", value, self.low.evaluate(lookup))
        high = compare("<=", value, self.high.evaluate(lookup))
        if low is False or high is False:
            result: bool | None = False
        elif low is None or high is None:
            result = None
        else:
            result = True
        return _negate(result, self.negated)


class In(Node):
    __slots__ = ("negated", "operand", "values")

    def __init__(self, operand: Node, values: frozenset[str], negated: bool) -> None:
        self.operand, self.values, self.negated = operand, values, negated

    def evaluate(self, lookup: Lookup) -> bool | None:
        value = self.operand.evaluate(lookup)
        if not isinstance(value, str):
            return None
        return _negate(value in self.values, self.negated)


class Like(Node):
    __slots__ = ("negated", "operand", "pattern")

    def __init__(self, operand: Node, pattern: re.Pattern[str], negated: bool) -> None:
        self.operand, self.pattern, self.negated = operand, pattern, negated

    def evaluate(self, lookup: Lookup) -> bool | None:
        value = self.operand.evaluate(lookup)
        if not isinstance(value, str):
            return None
        return _negate(self.pattern.fullmatch(value) is not None, self.negated)


class IsNull(Node):
    __slots__ = ("negated", "operand")

    def __init__(self, operand: Node, negated: bool) -> None:
        self.operand, self.negated = operand, negated

    def evaluate(self, lookup: Lookup) -> bool:
        return (self.operand.evaluate(lookup) is None) != self.negated


def _truth(value: Any) -> bool | None:
    """A value used as a condition: booleans are themselves, anything else is UNKNOWN."""
    return value if isinstance(value, bool) else None


def _negate(result: bool | None, negated: bool) -> bool | None:
    if result is None or not negated:
        return result
    return not result


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def compare(op: str, left: Any, right: Any) -> bool | None:
    """SQL comparison: NULL on either side, or operands of different kinds, give UNKNOWN;
    strings and booleans compare only with = and <>."""
    if left is None or right is None:
        return None
    if isinstance(left, bool) or isinstance(right, bool) or isinstance(left, str):
        if type(left) is not type(right) or op not in ("=", "<>"):
            return None
        return bool(left == right) if op == "=" else bool(left != right)
    if isinstance(right, str) or _number(left) is None or _number(right) is None:
        return None
    if op == "=":
        return bool(left == right)
    if op == "<>":
        return bool(left != right)
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)


def like_pattern(pattern: str, escape: str | None) -> re.Pattern[str]:
    """A LIKE pattern as a regular expression: `_` one character, `%` any run, the escape
    character taking the next one literally."""
    out: list[str] = []
    chars = iter(pattern)
    for char in chars:
        if escape is not None and char == escape:
            following = next(chars, None)
            out.append(re.escape(following if following is not None else char))
        elif char == "_":
            out.append(".")
        elif char == "%":
            out.append(".*")
        else:
            out.append(re.escape(char))
    return re.compile("".join(out), re.DOTALL)


# ---------------------------------------------------------------------- the parser
class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.index = 0

    @property
    def token(self) -> _Token:
        return self.tokens[self.index]

    def _advance(self) -> _Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def _is(self, kind: str, text: str | None = None) -> bool:
        token = self.token
        return token.kind == kind and (text is None or token.text == text)

    def _expect(self, kind: str, text: str | None, what: str) -> _Token:
        if not self._is(kind, text):
            self._fail(f"expected {what}")
        return self._advance()

    def _fail(self, expected: str) -> None:
        token = self.token
        found = "end of selector" if token.kind == "end" else repr(token.text)
        raise SelectorError(f"{expected}, found {found}", token.position)

    def parse(self) -> Node:
        node = self._or()
        if not self._is("end"):
            self._fail("expected AND, OR or the end of the selector")
        return node

    def _or(self) -> Node:
        node = self._and()
        while self._is("keyword", "OR"):
            self._advance()
            node = Or(node, self._and())
        return node

    def _and(self) -> Node:
        node = self._not()
        while self._is("keyword", "AND"):
            self._advance()
            node = And(node, self._not())
        return node

    def _not(self) -> Node:
        if self._is("keyword", "NOT"):
            self._advance()
            return Not(self._not())
        return self._predicate()

    def _predicate(self) -> Node:
        start = self.token
        left = self._sum()
        token = self.token
        if token.kind == "op" and token.text in ("=", "<>", "<", "<=", ">", ">="):
            self._advance()
            return Compare(token.text, left, self._sum())
        if self._is("keyword", "IS"):
            self._advance()
            negated = self._is("keyword", "NOT")
            if negated:
                self._advance()
            self._expect("keyword", "NULL", "NULL")
            return IsNull(left, negated)
        negated = self._is("keyword", "NOT")
        if negated:
            self._advance()
        if self._is("keyword", "BETWEEN"):
            self._advance()
            low = self._sum()
            self._expect("keyword", "AND", "AND")
            return Between(left, low, self._sum(), negated)
        if self._is("keyword", "IN"):
            self._identifier_only(left, start, "IN")
            self._advance()
            return In(left, self._in_list(), negated)
        if self._is("keyword", "LIKE"):
            self._identifier_only(left, start, "LIKE")
            self._advance()
            pattern = self._expect("string", None, "a string pattern").value
            escape = None
            if self._is("keyword", "ESCAPE"):
                self._advance()
                escape_token = self._expect("string", None, "an escape character")
                if len(escape_token.value) != 1:
                    raise SelectorError("the escape must be one character", escape_token.position)
                escape = escape_token.value
            return Like(left, like_pattern(pattern, escape), negated)
        if negated:
            self._fail("expected BETWEEN, IN or LIKE after NOT")
        return left

    def _identifier_only(self, node: Node, start: _Token, operator: str) -> None:
        if not isinstance(node, Identifier):
            raise SelectorError(f"{operator} needs an identifier on its left", start.position)

    def _in_list(self) -> frozenset[str]:
        self._expect("op", "(", "'('")
        values = [self._expect("string", None, "a string literal").value]
        while self._is("op", ","):
            self._advance()
            values.append(self._expect("string", None, "a string literal").value)
        self._expect("op", ")", "')'")
        return frozenset(values)

    def _sum(self) -> Node:
        node = self._product()
        while self.token.kind == "op" and self.token.text in ("+", "-"):
            op = self._advance().text
            node = Arithmetic(op, node, self._product())
        return node

    def _product(self) -> Node:
        node = self._unary()
        while self.token.kind == "op" and self.token.text in ("*", "/"):
            op = self._advance().text
            node = Arithmetic(op, node, self._unary())
        return node

    def _unary(self) -> Node:
        if self.token.kind == "op" and self.token.text in ("+", "-"):
            op = self._advance().text
            operand = self._unary()
            if op == "+":
                return operand
            if isinstance(operand, Literal) and _number(operand.value) is not None:
                return Literal(-operand.value)
            return Negate(operand)
        return self._primary()

    def _primary(self) -> Node:
        token = self.token
        if token.kind in ("number", "string"):
            self._advance()
            return Literal(token.value)
        if token.kind == "ident":
            self._advance()
            return Identifier(token.value)
        if token.kind == "keyword" and token.text in ("TRUE", "FALSE"):
            self._advance()
            return Literal(token.text == "TRUE")
        if token.kind == "keyword" and token.text == "NULL":
            self._advance()
            return Literal(None)
        if self._is("op", "("):
            self._advance()
            node = self._or()
            self._expect("op", ")", "')'")
            return node
        self._fail("expected a value, an identifier or '('")
        raise AssertionError  # _fail raised


class Selector:
    """A parsed selector: `matches` is true only where the condition is TRUE (not FALSE, not
    UNKNOWN), as JMS selects."""

    __slots__ = ("identifiers", "root", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.root: Node | None = _Parser(text).parse() if text.strip() else None
        self.identifiers = frozenset(_identifiers(self.root))

    def matches(self, lookup: Lookup) -> bool:
        return self.root is None or self.root.evaluate(lookup) is True


def _identifiers(node: Node | None) -> set[str]:
    if node is None:
        return set()
    if isinstance(node, Identifier):
        return {node.name}
    names: set[str] = set()
    for slot in ("operand", "left", "right", "low", "high"):
        if slot in type(node).__slots__:
            names |= _identifiers(getattr(node, slot))
    return names


def parse(text: str) -> Selector:
    """Parse once (per link or consumer); raises SelectorError with the column of the fault."""
    return Selector(text)


# ---------------------------------------------------------------------- message values
def value_of_field(field: Any) -> Any:
    """An application property (a typed header) as a selector sees it: booleans, numbers
    and strings; anything else is NULL."""
    if isinstance(field, FieldValue):
        kind, value = field.kind, field.value
        if kind == "longstr":
            try:
                return value.decode()
            except UnicodeDecodeError:
                return None
        if kind == "decimal":
            return float(value)
        if kind in ("binary", "table", "array", "void"):
            return None
        return value
    if isinstance(field, bool | int | float | str):
        return field
    if isinstance(field, bytes):
        try:
            return field.decode()
        except UnicodeDecodeError:
            return None
    return None


def jms_header(name: str, fields: dict[str, Any], entry: QueueEntry) -> Any:
    """A JMS header or JMSX name from a message's `to_fields` (the mapping Qpid JMS and the
    RabbitMQ JMS client use; docs/amqp10.md "Selectors" lists it)."""
    if name == "JMSDeliveryMode":
        return "PERSISTENT" if fields.get("delivery_mode") == 2 else "NON_PERSISTENT"
    if name == "JMSPriority":
        return fields.get("priority", DEFAULT_PRIORITY)
    if name == "JMSMessageID":
        return fields.get("message_id")
    if name == "JMSCorrelationID":
        return fields.get("correlation_id")
    if name == "JMSType":
        return fields.get("type")
    if name == "JMSTimestamp":
        timestamp = fields.get("timestamp")
        return None if timestamp is None else int(timestamp) * 1000
    if name == "JMSExpiration":
        timestamp, expiration = fields.get("timestamp"), fields.get("expiration")
        if timestamp is None or expiration is None or not str(expiration).isdigit():
            return 0  # JMS: 0 is "does not expire"
        return int(timestamp) * 1000 + int(expiration)
    if name == "JMSXUserID":
        return fields.get("user_id")
    if name == "JMSXDeliveryCount":
        return entry.delivery_count + 1
    return None  # JMSXGroupID, JMSXGroupSeq: 0-9-1 properties have no group


Overlay = Callable[[Message], dict[str, Any]]


class MessageSelector:
    """A selector bound to how one consumer reads messages: the engine's fields, with the
    names an `overlay` gives (a front end's more exact values) taking precedence. Only what
    the selector names is read; a message's properties are decoded once per evaluation."""

    __slots__ = ("_needs_overlay", "overlay", "selector")

    def __init__(
        self,
        selector: Selector,
        overlay: Overlay | None = None,
        overlay_names: frozenset[str] = frozenset(),
    ) -> None:
        self.selector = selector
        self.overlay = overlay
        self._needs_overlay = overlay is not None and bool(selector.identifiers & overlay_names)

    def __call__(self, entry: QueueEntry) -> bool:
        message = entry.message
        fields: dict[str, Any] | None = None
        extra: dict[str, Any] | None = None

        def lookup(name: str) -> Any:
            nonlocal fields, extra
            if extra is None and self._needs_overlay:
                assert self.overlay is not None
                extra = self.overlay(message)
            if extra is not None and name in extra:
                return extra[name]
            if fields is None:
                fields = message.codec.to_fields(message.raw_properties)
            if name in JMS_NAMES:
                return jms_header(name, fields, entry)
            headers = fields.get("headers")
            return value_of_field(headers.get(name)) if headers else None

        return self.selector.matches(lookup)
