"""The AMQP 1.0 spec's composite and restricted types as classes, with their field tables,
choices, error conditions and definitions.

Generated from the spec's XML (spec/*.bare.xml) by `python -m rabbitish.bridge.codec.generate`:
do not edit (tests/unit/bridge/codec/test_generate.py fails when this file and the XML differ).
definitions.py gives the classes their field writers and readers; see there for how fields are
encoded and decoded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .values import Composite, FieldSpec, Restricted, Symbol, UByte, UInt, ULong, UShort

# The default of a mandatory field: None until the caller sets one (encoding refuses None),
# typed Any so the field's annotation says what a decoded frame always holds.
_MANDATORY: Any = None


# ---------------------------------------------------------------------- restricted types
# Each restricted type's source (``delivery-number`` -> ``sequence-no``).
RESTRICTED_SOURCES: dict[str, str] = {
    "role": "boolean",
    "sender-settle-mode": "ubyte",
    "receiver-settle-mode": "ubyte",
    "handle": "uint",
    "seconds": "uint",
    "milliseconds": "uint",
    "delivery-tag": "binary",
    "delivery-number": "sequence-no",
    "transfer-number": "sequence-no",
    "sequence-no": "uint",
    "message-format": "uint",
    "ietf-language-tag": "symbol",
    "fields": "map",
    "amqp-error": "symbol",
    "connection-error": "symbol",
    "session-error": "symbol",
    "link-error": "symbol",
    "delivery-annotations": "annotations",
    "message-annotations": "annotations",
    "application-properties": "map",
    "data": "binary",
    "amqp-sequence": "list",
    "amqp-value": "*",
    "footer": "annotations",
    "annotations": "map",
    "message-id-ulong": "ulong",
    "message-id-uuid": "uuid",
    "message-id-binary": "binary",
    "message-id-string": "string",
    "address-string": "string",
    "terminus-durability": "uint",
    "terminus-expiry-policy": "symbol",
    "std-dist-mode": "symbol",
    "filter-set": "map",
    "node-properties": "fields",
    "sasl-code": "ubyte",
    "transaction-id": "binary",
    "txn-capability": "symbol",
    "transaction-error": "symbol",
}


# ---------------------------------------------------------------------- error conditions
# amqp-error
INTERNAL_ERROR = Symbol("amqp:internal-error")
NOT_FOUND = Symbol("amqp:not-found")
UNAUTHORIZED_ACCESS = Symbol("amqp:unauthorized-access")
DECODE_ERROR = Symbol("amqp:decode-error")
RESOURCE_LIMIT_EXCEEDED = Symbol("amqp:resource-limit-exceeded")
NOT_ALLOWED = Symbol("amqp:not-allowed")
INVALID_FIELD = Symbol("amqp:invalid-field")
NOT_IMPLEMENTED = Symbol("amqp:not-implemented")
RESOURCE_LOCKED = Symbol("amqp:resource-locked")
PRECONDITION_FAILED = Symbol("amqp:precondition-failed")
RESOURCE_DELETED = Symbol("amqp:resource-deleted")
ILLEGAL_STATE = Symbol("amqp:illegal-state")
FRAME_SIZE_TOO_SMALL = Symbol("amqp:frame-size-too-small")
# connection-error
CONNECTION_FORCED = Symbol("amqp:connection:forced")
CONNECTION_FRAMING_ERROR = Symbol("amqp:connection:framing-error")
CONNECTION_REDIRECT = Symbol("amqp:connection:redirect")
# session-error
SESSION_WINDOW_VIOLATION = Symbol("amqp:session:window-violation")
SESSION_ERRANT_LINK = Symbol("amqp:session:errant-link")
SESSION_HANDLE_IN_USE = Symbol("amqp:session:handle-in-use")
SESSION_UNATTACHED_HANDLE = Symbol("amqp:session:unattached-handle")
# link-error
LINK_DETACH_FORCED = Symbol("amqp:link:detach-forced")
LINK_TRANSFER_LIMIT_EXCEEDED = Symbol("amqp:link:transfer-limit-exceeded")
LINK_MESSAGE_SIZE_EXCEEDED = Symbol("amqp:link:message-size-exceeded")
LINK_REDIRECT = Symbol("amqp:link:redirect")
LINK_STOLEN = Symbol("amqp:link:stolen")
# transaction-error
TRANSACTION_UNKNOWN_ID = Symbol("amqp:transaction:unknown-id")
TRANSACTION_ROLLBACK = Symbol("amqp:transaction:rollback")
TRANSACTION_TIMEOUT = Symbol("amqp:transaction:timeout")

# Every error condition symbol by constant name.
CONDITIONS: dict[str, Symbol] = {
    "INTERNAL_ERROR": INTERNAL_ERROR,
    "NOT_FOUND": NOT_FOUND,
    "UNAUTHORIZED_ACCESS": UNAUTHORIZED_ACCESS,
    "DECODE_ERROR": DECODE_ERROR,
    "RESOURCE_LIMIT_EXCEEDED": RESOURCE_LIMIT_EXCEEDED,
    "NOT_ALLOWED": NOT_ALLOWED,
    "INVALID_FIELD": INVALID_FIELD,
    "NOT_IMPLEMENTED": NOT_IMPLEMENTED,
    "RESOURCE_LOCKED": RESOURCE_LOCKED,
    "PRECONDITION_FAILED": PRECONDITION_FAILED,
    "RESOURCE_DELETED": RESOURCE_DELETED,
    "ILLEGAL_STATE": ILLEGAL_STATE,
    "FRAME_SIZE_TOO_SMALL": FRAME_SIZE_TOO_SMALL,
    "CONNECTION_FORCED": CONNECTION_FORCED,
    "CONNECTION_FRAMING_ERROR": CONNECTION_FRAMING_ERROR,
    "CONNECTION_REDIRECT": CONNECTION_REDIRECT,
    "SESSION_WINDOW_VIOLATION": SESSION_WINDOW_VIOLATION,
    "SESSION_ERRANT_LINK": SESSION_ERRANT_LINK,
    "SESSION_HANDLE_IN_USE": SESSION_HANDLE_IN_USE,
    "SESSION_UNATTACHED_HANDLE": SESSION_UNATTACHED_HANDLE,
    "LINK_DETACH_FORCED": LINK_DETACH_FORCED,
    "LINK_TRANSFER_LIMIT_EXCEEDED": LINK_TRANSFER_LIMIT_EXCEEDED,
    "LINK_MESSAGE_SIZE_EXCEEDED": LINK_MESSAGE_SIZE_EXCEEDED,
    "LINK_REDIRECT": LINK_REDIRECT,
    "LINK_STOLEN": LINK_STOLEN,
    "TRANSACTION_UNKNOWN_ID": TRANSACTION_UNKNOWN_ID,
    "TRANSACTION_ROLLBACK": TRANSACTION_ROLLBACK,
    "TRANSACTION_TIMEOUT": TRANSACTION_TIMEOUT,
}


# ---------------------------------------------------------------------- choices


class Role:
    """Values of the restricted type role (boolean)."""

    __slots__ = ()
    SENDER: ClassVar[bool] = False
    RECEIVER: ClassVar[bool] = True
    VALUES: ClassVar[dict[str, bool]] = {"sender": SENDER, "receiver": RECEIVER}


class SenderSettleMode:
    """Values of the restricted type sender-settle-mode (ubyte)."""

    __slots__ = ()
    UNSETTLED: ClassVar[UByte] = UByte(0)
    SETTLED: ClassVar[UByte] = UByte(1)
    MIXED: ClassVar[UByte] = UByte(2)
    VALUES: ClassVar[dict[str, UByte]] = {
        "unsettled": UNSETTLED,
        "settled": SETTLED,
        "mixed": MIXED,
    }


class ReceiverSettleMode:
    """Values of the restricted type receiver-settle-mode (ubyte)."""

    __slots__ = ()
    FIRST: ClassVar[UByte] = UByte(0)
    SECOND: ClassVar[UByte] = UByte(1)
    VALUES: ClassVar[dict[str, UByte]] = {"first": FIRST, "second": SECOND}


class TerminusDurability:
    """Values of the restricted type terminus-durability (uint)."""

    __slots__ = ()
    NONE: ClassVar[UInt] = UInt(0)
    CONFIGURATION: ClassVar[UInt] = UInt(1)
    UNSETTLED_STATE: ClassVar[UInt] = UInt(2)
    VALUES: ClassVar[dict[str, UInt]] = {
        "none": NONE,
        "configuration": CONFIGURATION,
        "unsettled-state": UNSETTLED_STATE,
    }


class TerminusExpiryPolicy:
    """Values of the restricted type terminus-expiry-policy (symbol)."""

    __slots__ = ()
    LINK_DETACH: ClassVar[Symbol] = Symbol("link-detach")
    SESSION_END: ClassVar[Symbol] = Symbol("session-end")
    CONNECTION_CLOSE: ClassVar[Symbol] = Symbol("connection-close")
    NEVER: ClassVar[Symbol] = Symbol("never")
    VALUES: ClassVar[dict[str, Symbol]] = {
        "link-detach": LINK_DETACH,
        "session-end": SESSION_END,
        "connection-close": CONNECTION_CLOSE,
        "never": NEVER,
    }


class StdDistMode:
    """Values of the restricted type std-dist-mode (symbol)."""

    __slots__ = ()
    MOVE: ClassVar[Symbol] = Symbol("move")
    COPY: ClassVar[Symbol] = Symbol("copy")
    VALUES: ClassVar[dict[str, Symbol]] = {"move": MOVE, "copy": COPY}


class SaslCode:
    """Values of the restricted type sasl-code (ubyte)."""

    __slots__ = ()
    OK: ClassVar[UByte] = UByte(0)
    AUTH: ClassVar[UByte] = UByte(1)
    SYS: ClassVar[UByte] = UByte(2)
    SYS_PERM: ClassVar[UByte] = UByte(3)
    SYS_TEMP: ClassVar[UByte] = UByte(4)
    VALUES: ClassVar[dict[str, UByte]] = {
        "ok": OK,
        "auth": AUTH,
        "sys": SYS,
        "sys-perm": SYS_PERM,
        "sys-temp": SYS_TEMP,
    }


class TxnCapability:
    """Values of the restricted type txn-capability (symbol)."""

    __slots__ = ()
    LOCAL_TRANSACTIONS: ClassVar[Symbol] = Symbol("amqp:local-transactions")
    DISTRIBUTED_TRANSACTIONS: ClassVar[Symbol] = Symbol("amqp:distributed-transactions")
    PROMOTABLE_TRANSACTIONS: ClassVar[Symbol] = Symbol("amqp:promotable-transactions")
    MULTI_TXNS_PER_SSN: ClassVar[Symbol] = Symbol("amqp:multi-txns-per-ssn")
    MULTI_SSNS_PER_TXN: ClassVar[Symbol] = Symbol("amqp:multi-ssns-per-txn")
    VALUES: ClassVar[dict[str, Symbol]] = {
        "local-transactions": LOCAL_TRANSACTIONS,
        "distributed-transactions": DISTRIBUTED_TRANSACTIONS,
        "promotable-transactions": PROMOTABLE_TRANSACTIONS,
        "multi-txns-per-ssn": MULTI_TXNS_PER_SSN,
        "multi-ssns-per-txn": MULTI_SSNS_PER_TXN,
    }


# Every restricted type with choices: its values by choice name (error conditions
# included).
CHOICES: dict[str, dict[str, Any]] = {
    "role": dict(Role.VALUES),
    "sender-settle-mode": dict(SenderSettleMode.VALUES),
    "receiver-settle-mode": dict(ReceiverSettleMode.VALUES),
    "amqp-error": {
        "internal-error": INTERNAL_ERROR,
        "not-found": NOT_FOUND,
        "unauthorized-access": UNAUTHORIZED_ACCESS,
        "decode-error": DECODE_ERROR,
        "resource-limit-exceeded": RESOURCE_LIMIT_EXCEEDED,
        "not-allowed": NOT_ALLOWED,
        "invalid-field": INVALID_FIELD,
        "not-implemented": NOT_IMPLEMENTED,
        "resource-locked": RESOURCE_LOCKED,
        "precondition-failed": PRECONDITION_FAILED,
        "resource-deleted": RESOURCE_DELETED,
        "illegal-state": ILLEGAL_STATE,
        "frame-size-too-small": FRAME_SIZE_TOO_SMALL,
    },
    "connection-error": {
        "connection-forced": CONNECTION_FORCED,
        "framing-error": CONNECTION_FRAMING_ERROR,
        "redirect": CONNECTION_REDIRECT,
    },
    "session-error": {
        "window-violation": SESSION_WINDOW_VIOLATION,
        "errant-link": SESSION_ERRANT_LINK,
        "handle-in-use": SESSION_HANDLE_IN_USE,
        "unattached-handle": SESSION_UNATTACHED_HANDLE,
    },
    "link-error": {
        "detach-forced": LINK_DETACH_FORCED,
        "transfer-limit-exceeded": LINK_TRANSFER_LIMIT_EXCEEDED,
        "message-size-exceeded": LINK_MESSAGE_SIZE_EXCEEDED,
        "redirect": LINK_REDIRECT,
        "stolen": LINK_STOLEN,
    },
    "terminus-durability": dict(TerminusDurability.VALUES),
    "terminus-expiry-policy": dict(TerminusExpiryPolicy.VALUES),
    "std-dist-mode": dict(StdDistMode.VALUES),
    "sasl-code": dict(SaslCode.VALUES),
    "txn-capability": dict(TxnCapability.VALUES),
    "transaction-error": {
        "unknown-id": TRANSACTION_UNKNOWN_ID,
        "transaction-rollback": TRANSACTION_ROLLBACK,
        "transaction-timeout": TRANSACTION_TIMEOUT,
    },
}


# ---------------------------------------------------------------------- definitions
PORT = 5672
SECURE_PORT = 5671
MAJOR = 1
MINOR = 0
REVISION = 0
MIN_MAX_FRAME_SIZE = 512
MESSAGE_FORMAT = 0
TLS_MAJOR = 1
TLS_MINOR = 0
TLS_REVISION = 0
SASL_MAJOR = 1
SASL_MINOR = 0
SASL_REVISION = 0

# The <definition> values (PORT, MIN-MAX-FRAME-SIZE...) by name.
DEFINITIONS: dict[str, int] = {
    "PORT": PORT,
    "SECURE_PORT": SECURE_PORT,
    "MAJOR": MAJOR,
    "MINOR": MINOR,
    "REVISION": REVISION,
    "MIN_MAX_FRAME_SIZE": MIN_MAX_FRAME_SIZE,
    "MESSAGE_FORMAT": MESSAGE_FORMAT,
    "TLS_MAJOR": TLS_MAJOR,
    "TLS_MINOR": TLS_MINOR,
    "TLS_REVISION": TLS_REVISION,
    "SASL_MAJOR": SASL_MAJOR,
    "SASL_MINOR": SASL_MINOR,
    "SASL_REVISION": SASL_REVISION,
}


# ---------------------------------------------------------------------- composite types


@dataclass(kw_only=True, slots=True, repr=False)
class Open(Composite):
    """AMQP open (transport), descriptor 0x00000010."""

    DESCRIPTOR = ULong(0x00000010)
    DESCRIPTOR_NAME = Symbol("amqp:open:list")
    AMQP_NAME = "open"
    PROVIDES = frozenset({"frame"})
    _PREFIX = b"\x00\x53\x10"
    FIELDS = (
        FieldSpec("container-id", "string", False, True, None),
        FieldSpec("hostname", "string", False, False, None),
        FieldSpec("max-frame-size", "uint", False, False, None),
        FieldSpec("channel-max", "ushort", False, False, None),
        FieldSpec("idle-time-out", "milliseconds", False, False, None),
        FieldSpec("outgoing-locales", "ietf-language-tag", True, False, None),
        FieldSpec("incoming-locales", "ietf-language-tag", True, False, None),
        FieldSpec("offered-capabilities", "symbol", True, False, None),
        FieldSpec("desired-capabilities", "symbol", True, False, None),
        FieldSpec("properties", "fields", False, False, None),
    )
    ATTRS = (
        "container_id",
        "hostname",
        "max_frame_size",
        "channel_max",
        "idle_time_out",
        "outgoing_locales",
        "incoming_locales",
        "offered_capabilities",
        "desired_capabilities",
        "properties",
    )
    DEFAULTS = (None, None, UInt(4294967295), UShort(65535), None, None, None, None, None, None)

    container_id: str = _MANDATORY
    hostname: str | None = None
    max_frame_size: int = UInt(4294967295)
    channel_max: int = UShort(65535)
    idle_time_out: int | None = None
    outgoing_locales: list[str] | None = None
    incoming_locales: list[str] | None = None
    offered_capabilities: list[str] | None = None
    desired_capabilities: list[str] | None = None
    properties: dict[Any, Any] | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class Begin(Composite):
    """AMQP begin (transport), descriptor 0x00000011."""

    DESCRIPTOR = ULong(0x00000011)
    DESCRIPTOR_NAME = Symbol("amqp:begin:list")
    AMQP_NAME = "begin"
    PROVIDES = frozenset({"frame"})
    _PREFIX = b"\x00\x53\x11"
    FIELDS = (
        FieldSpec("remote-channel", "ushort", False, False, None),
        FieldSpec("next-outgoing-id", "transfer-number", False, True, None),
        FieldSpec("incoming-window", "uint", False, True, None),
        FieldSpec("outgoing-window", "uint", False, True, None),
        FieldSpec("handle-max", "handle", False, False, None),
        FieldSpec("offered-capabilities", "symbol", True, False, None),
        FieldSpec("desired-capabilities", "symbol", True, False, None),
        FieldSpec("properties", "fields", False, False, None),
    )
    ATTRS = (
        "remote_channel",
        "next_outgoing_id",
        "incoming_window",
        "outgoing_window",
        "handle_max",
        "offered_capabilities",
        "desired_capabilities",
        "properties",
    )
    DEFAULTS = (None, None, None, None, UInt(4294967295), None, None, None)

    remote_channel: int | None = None
    next_outgoing_id: int = _MANDATORY
    incoming_window: int = _MANDATORY
    outgoing_window: int = _MANDATORY
    handle_max: int = UInt(4294967295)
    offered_capabilities: list[str] | None = None
    desired_capabilities: list[str] | None = None
    properties: dict[Any, Any] | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class Attach(Composite):
    """AMQP attach (transport), descriptor 0x00000012."""

    DESCRIPTOR = ULong(0x00000012)
    DESCRIPTOR_NAME = Symbol("amqp:attach:list")
    AMQP_NAME = "attach"
    PROVIDES = frozenset({"frame"})
    _PREFIX = b"\x00\x53\x12"
    FIELDS = (
        FieldSpec("name", "string", False, True, None),
        FieldSpec("handle", "handle", False, True, None),
        FieldSpec("role", "role", False, True, None),
        FieldSpec("snd-settle-mode", "sender-settle-mode", False, False, None),
        FieldSpec("rcv-settle-mode", "receiver-settle-mode", False, False, None),
        FieldSpec("source", "*", False, False, "source"),
        FieldSpec("target", "*", False, False, "target"),
        FieldSpec("unsettled", "map", False, False, None),
        FieldSpec("incomplete-unsettled", "boolean", False, False, None),
        FieldSpec("initial-delivery-count", "sequence-no", False, False, None),
        FieldSpec("max-message-size", "ulong", False, False, None),
        FieldSpec("offered-capabilities", "symbol", True, False, None),
        FieldSpec("desired-capabilities", "symbol", True, False, None),
        FieldSpec("properties", "fields", False, False, None),
    )
    ATTRS = (
        "name",
        "handle",
        "role",
        "snd_settle_mode",
        "rcv_settle_mode",
        "source",
        "target",
        "unsettled",
        "incomplete_unsettled",
        "initial_delivery_count",
        "max_message_size",
        "offered_capabilities",
        "desired_capabilities",
        "properties",
    )
    DEFAULTS = (
        None,
        None,
        None,
        UByte(2),
        UByte(0),
        None,
        None,
        None,
        False,
        None,
        None,
        None,
        None,
        None,
    )

    name: str = _MANDATORY
    handle: int = _MANDATORY
    role: bool = _MANDATORY
    snd_settle_mode: int = UByte(2)
    rcv_settle_mode: int = UByte(0)
    source: Any | None = None
    target: Any | None = None
    unsettled: dict[Any, Any] | None = None
    incomplete_unsettled: bool = False
    initial_delivery_count: int | None = None
    max_message_size: int | None = None
    offered_capabilities: list[str] | None = None
    desired_capabilities: list[str] | None = None
    properties: dict[Any, Any] | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class Flow(Composite):
    """AMQP flow (transport), descriptor 0x00000013."""

    DESCRIPTOR = ULong(0x00000013)
    DESCRIPTOR_NAME = Symbol("amqp:flow:list")
    AMQP_NAME = "flow"
    PROVIDES = frozenset({"frame"})
    _PREFIX = b"\x00\x53\x13"
    FIELDS = (
        FieldSpec("next-incoming-id", "transfer-number", False, False, None),
        FieldSpec("incoming-window", "uint", False, True, None),
        FieldSpec("next-outgoing-id", "transfer-number", False, True, None),
        FieldSpec("outgoing-window", "uint", False, True, None),
        FieldSpec("handle", "handle", False, False, None),
        FieldSpec("delivery-count", "sequence-no", False, False, None),
        FieldSpec("link-credit", "uint", False, False, None),
        FieldSpec("available", "uint", False, False, None),
        FieldSpec("drain", "boolean", False, False, None),
        FieldSpec("echo", "boolean", False, False, None),
        FieldSpec("properties", "fields", False, False, None),
    )
    ATTRS = (
        "next_incoming_id",
        "incoming_window",
        "next_outgoing_id",
        "outgoing_window",
        "handle",
        "delivery_count",
        "link_credit",
        "available",
        "drain",
        "echo",
        "properties",
    )
    DEFAULTS = (None, None, None, None, None, None, None, None, False, False, None)

    next_incoming_id: int | None = None
    incoming_window: int = _MANDATORY
    next_outgoing_id: int = _MANDATORY
    outgoing_window: int = _MANDATORY
    handle: int | None = None
    delivery_count: int | None = None
    link_credit: int | None = None
    available: int | None = None
    drain: bool = False
    echo: bool = False
    properties: dict[Any, Any] | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class Transfer(Composite):
    """AMQP transfer (transport), descriptor 0x00000014."""

    DESCRIPTOR = ULong(0x00000014)
    DESCRIPTOR_NAME = Symbol("amqp:transfer:list")
    AMQP_NAME = "transfer"
    PROVIDES = frozenset({"frame"})
    _PREFIX = b"\x00\x53\x14"
    FIELDS = (
        FieldSpec("handle", "handle", False, True, None),
        FieldSpec("delivery-id", "delivery-number", False, False, None),
        FieldSpec("delivery-tag", "delivery-tag", False, False, None),
        FieldSpec("message-format", "message-format", False, False, None),
        FieldSpec("settled", "boolean", False, False, None),
        FieldSpec("more", "boolean", False, False, None),
        FieldSpec("rcv-settle-mode", "receiver-settle-mode", False, False, None),
        FieldSpec("state", "*", False, False, "delivery-state"),
        FieldSpec("resume", "boolean", False, False, None),
        FieldSpec("aborted", "boolean", False, False, None),
        FieldSpec("batchable", "boolean", False, False, None),
    )
    ATTRS = (
        "handle",
        "delivery_id",
        "delivery_tag",
        "message_format",
        "settled",
        "more",
        "rcv_settle_mode",
        "state",
        "resume",
        "aborted",
        "batchable",
    )
    DEFAULTS = (None, None, None, None, None, False, None, None, False, False, False)

    handle: int = _MANDATORY
    delivery_id: int | None = None
    delivery_tag: bytes | None = None
    message_format: int | None = None
    settled: bool | None = None
    more: bool = False
    rcv_settle_mode: int | None = None
    state: Any | None = None
    resume: bool = False
    aborted: bool = False
    batchable: bool = False


@dataclass(kw_only=True, slots=True, repr=False)
class Disposition(Composite):
    """AMQP disposition (transport), descriptor 0x00000015."""

    DESCRIPTOR = ULong(0x00000015)
    DESCRIPTOR_NAME = Symbol("amqp:disposition:list")
    AMQP_NAME = "disposition"
    PROVIDES = frozenset({"frame"})
    _PREFIX = b"\x00\x53\x15"
    FIELDS = (
        FieldSpec("role", "role", False, True, None),
        FieldSpec("first", "delivery-number", False, True, None),
        FieldSpec("last", "delivery-number", False, False, None),
        FieldSpec("settled", "boolean", False, False, None),
        FieldSpec("state", "*", False, False, "delivery-state"),
        FieldSpec("batchable", "boolean", False, False, None),
    )
    ATTRS = ("role", "first", "last", "settled", "state", "batchable")
    DEFAULTS = (None, None, None, False, None, False)

    role: bool = _MANDATORY
    first: int = _MANDATORY
    last: int | None = None
    settled: bool = False
    state: Any | None = None
    batchable: bool = False


@dataclass(kw_only=True, slots=True, repr=False)
class Detach(Composite):
    """AMQP detach (transport), descriptor 0x00000016."""

    DESCRIPTOR = ULong(0x00000016)
    DESCRIPTOR_NAME = Symbol("amqp:detach:list")
    AMQP_NAME = "detach"
    PROVIDES = frozenset({"frame"})
    _PREFIX = b"\x00\x53\x16"
    FIELDS = (
        FieldSpec("handle", "handle", False, True, None),
        FieldSpec("closed", "boolean", False, False, None),
        FieldSpec("error", "error", False, False, None),
    )
    ATTRS = ("handle", "closed", "error")
    DEFAULTS = (None, False, None)

    handle: int = _MANDATORY
    closed: bool = False
    error: Error | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class End(Composite):
    """AMQP end (transport), descriptor 0x00000017."""

    DESCRIPTOR = ULong(0x00000017)
    DESCRIPTOR_NAME = Symbol("amqp:end:list")
    AMQP_NAME = "end"
    PROVIDES = frozenset({"frame"})
    _PREFIX = b"\x00\x53\x17"
    FIELDS = (FieldSpec("error", "error", False, False, None),)
    ATTRS = ("error",)
    DEFAULTS = (None,)

    error: Error | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class Close(Composite):
    """AMQP close (transport), descriptor 0x00000018."""

    DESCRIPTOR = ULong(0x00000018)
    DESCRIPTOR_NAME = Symbol("amqp:close:list")
    AMQP_NAME = "close"
    PROVIDES = frozenset({"frame"})
    _PREFIX = b"\x00\x53\x18"
    FIELDS = (FieldSpec("error", "error", False, False, None),)
    ATTRS = ("error",)
    DEFAULTS = (None,)

    error: Error | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class Error(Composite):
    """AMQP error (transport), descriptor 0x0000001d."""

    DESCRIPTOR = ULong(0x0000001D)
    DESCRIPTOR_NAME = Symbol("amqp:error:list")
    AMQP_NAME = "error"
    PROVIDES = frozenset()
    _PREFIX = b"\x00\x53\x1d"
    FIELDS = (
        FieldSpec("condition", "symbol", False, True, "error-condition"),
        FieldSpec("description", "string", False, False, None),
        FieldSpec("info", "fields", False, False, None),
    )
    ATTRS = ("condition", "description", "info")
    DEFAULTS = (None, None, None)

    condition: str = _MANDATORY
    description: str | None = None
    info: dict[Any, Any] | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class Header(Composite):
    """AMQP header (messaging), descriptor 0x00000070."""

    DESCRIPTOR = ULong(0x00000070)
    DESCRIPTOR_NAME = Symbol("amqp:header:list")
    AMQP_NAME = "header"
    PROVIDES = frozenset({"section"})
    _PREFIX = b"\x00\x53\x70"
    FIELDS = (
        FieldSpec("durable", "boolean", False, False, None),
        FieldSpec("priority", "ubyte", False, False, None),
        FieldSpec("ttl", "milliseconds", False, False, None),
        FieldSpec("first-acquirer", "boolean", False, False, None),
        FieldSpec("delivery-count", "uint", False, False, None),
    )
    ATTRS = ("durable", "priority", "ttl", "first_acquirer", "delivery_count")
    DEFAULTS = (None, None, None, None, None)

    durable: bool | None = None
    priority: int | None = None
    ttl: int | None = None
    first_acquirer: bool | None = None
    delivery_count: int | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class Properties(Composite):
    """AMQP properties (messaging), descriptor 0x00000073."""

    DESCRIPTOR = ULong(0x00000073)
    DESCRIPTOR_NAME = Symbol("amqp:properties:list")
    AMQP_NAME = "properties"
    PROVIDES = frozenset({"section"})
    _PREFIX = b"\x00\x53\x73"
    FIELDS = (
        FieldSpec("message-id", "*", False, False, "message-id"),
        FieldSpec("user-id", "binary", False, False, None),
        FieldSpec("to", "*", False, False, "address"),
        FieldSpec("subject", "string", False, False, None),
        FieldSpec("reply-to", "*", False, False, "address"),
        FieldSpec("correlation-id", "*", False, False, "message-id"),
        FieldSpec("content-type", "symbol", False, False, None),
        FieldSpec("content-encoding", "symbol", False, False, None),
        FieldSpec("absolute-expiry-time", "timestamp", False, False, None),
        FieldSpec("creation-time", "timestamp", False, False, None),
        FieldSpec("group-id", "string", False, False, None),
        FieldSpec("group-sequence", "sequence-no", False, False, None),
        FieldSpec("reply-to-group-id", "string", False, False, None),
    )
    ATTRS = (
        "message_id",
        "user_id",
        "to",
        "subject",
        "reply_to",
        "correlation_id",
        "content_type",
        "content_encoding",
        "absolute_expiry_time",
        "creation_time",
        "group_id",
        "group_sequence",
        "reply_to_group_id",
    )
    DEFAULTS = (None, None, None, None, None, None, None, None, None, None, None, None, None)

    message_id: Any | None = None
    user_id: bytes | None = None
    to: Any | None = None
    subject: str | None = None
    reply_to: Any | None = None
    correlation_id: Any | None = None
    content_type: str | None = None
    content_encoding: str | None = None
    absolute_expiry_time: int | None = None
    creation_time: int | None = None
    group_id: str | None = None
    group_sequence: int | None = None
    reply_to_group_id: str | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class Received(Composite):
    """AMQP received (messaging), descriptor 0x00000023."""

    DESCRIPTOR = ULong(0x00000023)
    DESCRIPTOR_NAME = Symbol("amqp:received:list")
    AMQP_NAME = "received"
    PROVIDES = frozenset({"delivery-state"})
    _PREFIX = b"\x00\x53\x23"
    FIELDS = (
        FieldSpec("section-number", "uint", False, True, None),
        FieldSpec("section-offset", "ulong", False, True, None),
    )
    ATTRS = ("section_number", "section_offset")
    DEFAULTS = (None, None)

    section_number: int = _MANDATORY
    section_offset: int = _MANDATORY


@dataclass(kw_only=True, slots=True, repr=False)
class Accepted(Composite):
    """AMQP accepted (messaging), descriptor 0x00000024."""

    DESCRIPTOR = ULong(0x00000024)
    DESCRIPTOR_NAME = Symbol("amqp:accepted:list")
    AMQP_NAME = "accepted"
    PROVIDES = frozenset({"delivery-state", "outcome"})
    _PREFIX = b"\x00\x53\x24"
    FIELDS = ()
    ATTRS = ()
    DEFAULTS = ()


@dataclass(kw_only=True, slots=True, repr=False)
class Rejected(Composite):
    """AMQP rejected (messaging), descriptor 0x00000025."""

    DESCRIPTOR = ULong(0x00000025)
    DESCRIPTOR_NAME = Symbol("amqp:rejected:list")
    AMQP_NAME = "rejected"
    PROVIDES = frozenset({"delivery-state", "outcome"})
    _PREFIX = b"\x00\x53\x25"
    FIELDS = (FieldSpec("error", "error", False, False, None),)
    ATTRS = ("error",)
    DEFAULTS = (None,)

    error: Error | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class Released(Composite):
    """AMQP released (messaging), descriptor 0x00000026."""

    DESCRIPTOR = ULong(0x00000026)
    DESCRIPTOR_NAME = Symbol("amqp:released:list")
    AMQP_NAME = "released"
    PROVIDES = frozenset({"delivery-state", "outcome"})
    _PREFIX = b"\x00\x53\x26"
    FIELDS = ()
    ATTRS = ()
    DEFAULTS = ()


@dataclass(kw_only=True, slots=True, repr=False)
class Modified(Composite):
    """AMQP modified (messaging), descriptor 0x00000027."""

    DESCRIPTOR = ULong(0x00000027)
    DESCRIPTOR_NAME = Symbol("amqp:modified:list")
    AMQP_NAME = "modified"
    PROVIDES = frozenset({"delivery-state", "outcome"})
    _PREFIX = b"\x00\x53\x27"
    FIELDS = (
        FieldSpec("delivery-failed", "boolean", False, False, None),
        FieldSpec("undeliverable-here", "boolean", False, False, None),
        FieldSpec("message-annotations", "fields", False, False, None),
    )
    ATTRS = ("delivery_failed", "undeliverable_here", "message_annotations")
    DEFAULTS = (None, None, None)

    delivery_failed: bool | None = None
    undeliverable_here: bool | None = None
    message_annotations: dict[Any, Any] | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class Source(Composite):
    """AMQP source (messaging), descriptor 0x00000028."""

    DESCRIPTOR = ULong(0x00000028)
    DESCRIPTOR_NAME = Symbol("amqp:source:list")
    AMQP_NAME = "source"
    PROVIDES = frozenset({"source"})
    _PREFIX = b"\x00\x53\x28"
    FIELDS = (
        FieldSpec("address", "*", False, False, "address"),
        FieldSpec("durable", "terminus-durability", False, False, None),
        FieldSpec("expiry-policy", "terminus-expiry-policy", False, False, None),
        FieldSpec("timeout", "seconds", False, False, None),
        FieldSpec("dynamic", "boolean", False, False, None),
        FieldSpec("dynamic-node-properties", "node-properties", False, False, None),
        FieldSpec("distribution-mode", "symbol", False, False, "distribution-mode"),
        FieldSpec("filter", "filter-set", False, False, None),
        FieldSpec("default-outcome", "*", False, False, "outcome"),
        FieldSpec("outcomes", "symbol", True, False, None),
        FieldSpec("capabilities", "symbol", True, False, None),
    )
    ATTRS = (
        "address",
        "durable",
        "expiry_policy",
        "timeout",
        "dynamic",
        "dynamic_node_properties",
        "distribution_mode",
        "filter",
        "default_outcome",
        "outcomes",
        "capabilities",
    )
    DEFAULTS = (
        None,
        UInt(0),
        Symbol("session-end"),
        UInt(0),
        False,
        None,
        None,
        None,
        None,
        None,
        None,
    )

    address: Any | None = None
    durable: int = UInt(0)
    expiry_policy: str = Symbol("session-end")
    timeout: int = UInt(0)
    dynamic: bool = False
    dynamic_node_properties: dict[Any, Any] | None = None
    distribution_mode: str | None = None
    filter: dict[Any, Any] | None = None
    default_outcome: Any | None = None
    outcomes: list[str] | None = None
    capabilities: list[str] | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class Target(Composite):
    """AMQP target (messaging), descriptor 0x00000029."""

    DESCRIPTOR = ULong(0x00000029)
    DESCRIPTOR_NAME = Symbol("amqp:target:list")
    AMQP_NAME = "target"
    PROVIDES = frozenset({"target"})
    _PREFIX = b"\x00\x53\x29"
    FIELDS = (
        FieldSpec("address", "*", False, False, "address"),
        FieldSpec("durable", "terminus-durability", False, False, None),
        FieldSpec("expiry-policy", "terminus-expiry-policy", False, False, None),
        FieldSpec("timeout", "seconds", False, False, None),
        FieldSpec("dynamic", "boolean", False, False, None),
        FieldSpec("dynamic-node-properties", "node-properties", False, False, None),
        FieldSpec("capabilities", "symbol", True, False, None),
    )
    ATTRS = (
        "address",
        "durable",
        "expiry_policy",
        "timeout",
        "dynamic",
        "dynamic_node_properties",
        "capabilities",
    )
    DEFAULTS = (None, UInt(0), Symbol("session-end"), UInt(0), False, None, None)

    address: Any | None = None
    durable: int = UInt(0)
    expiry_policy: str = Symbol("session-end")
    timeout: int = UInt(0)
    dynamic: bool = False
    dynamic_node_properties: dict[Any, Any] | None = None
    capabilities: list[str] | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class DeleteOnClose(Composite):
    """AMQP delete-on-close (messaging), descriptor 0x0000002b."""

    DESCRIPTOR = ULong(0x0000002B)
    DESCRIPTOR_NAME = Symbol("amqp:delete-on-close:list")
    AMQP_NAME = "delete-on-close"
    PROVIDES = frozenset({"lifetime-policy"})
    _PREFIX = b"\x00\x53\x2b"
    FIELDS = ()
    ATTRS = ()
    DEFAULTS = ()


@dataclass(kw_only=True, slots=True, repr=False)
class DeleteOnNoLinks(Composite):
    """AMQP delete-on-no-links (messaging), descriptor 0x0000002c."""

    DESCRIPTOR = ULong(0x0000002C)
    DESCRIPTOR_NAME = Symbol("amqp:delete-on-no-links:list")
    AMQP_NAME = "delete-on-no-links"
    PROVIDES = frozenset({"lifetime-policy"})
    _PREFIX = b"\x00\x53\x2c"
    FIELDS = ()
    ATTRS = ()
    DEFAULTS = ()


@dataclass(kw_only=True, slots=True, repr=False)
class DeleteOnNoMessages(Composite):
    """AMQP delete-on-no-messages (messaging), descriptor 0x0000002d."""

    DESCRIPTOR = ULong(0x0000002D)
    DESCRIPTOR_NAME = Symbol("amqp:delete-on-no-messages:list")
    AMQP_NAME = "delete-on-no-messages"
    PROVIDES = frozenset({"lifetime-policy"})
    _PREFIX = b"\x00\x53\x2d"
    FIELDS = ()
    ATTRS = ()
    DEFAULTS = ()


@dataclass(kw_only=True, slots=True, repr=False)
class DeleteOnNoLinksOrMessages(Composite):
    """AMQP delete-on-no-links-or-messages (messaging), descriptor 0x0000002e."""

    DESCRIPTOR = ULong(0x0000002E)
    DESCRIPTOR_NAME = Symbol("amqp:delete-on-no-links-or-messages:list")
    AMQP_NAME = "delete-on-no-links-or-messages"
    PROVIDES = frozenset({"lifetime-policy"})
    _PREFIX = b"\x00\x53\x2e"
    FIELDS = ()
    ATTRS = ()
    DEFAULTS = ()


@dataclass(kw_only=True, slots=True, repr=False)
class SaslMechanisms(Composite):
    """AMQP sasl-mechanisms (security), descriptor 0x00000040."""

    DESCRIPTOR = ULong(0x00000040)
    DESCRIPTOR_NAME = Symbol("amqp:sasl-mechanisms:list")
    AMQP_NAME = "sasl-mechanisms"
    PROVIDES = frozenset({"sasl-frame"})
    _PREFIX = b"\x00\x53\x40"
    FIELDS = (FieldSpec("sasl-server-mechanisms", "symbol", True, True, None),)
    ATTRS = ("sasl_server_mechanisms",)
    DEFAULTS = (None,)

    sasl_server_mechanisms: list[str] = _MANDATORY


@dataclass(kw_only=True, slots=True, repr=False)
class SaslInit(Composite):
    """AMQP sasl-init (security), descriptor 0x00000041."""

    DESCRIPTOR = ULong(0x00000041)
    DESCRIPTOR_NAME = Symbol("amqp:sasl-init:list")
    AMQP_NAME = "sasl-init"
    PROVIDES = frozenset({"sasl-frame"})
    _PREFIX = b"\x00\x53\x41"
    FIELDS = (
        FieldSpec("mechanism", "symbol", False, True, None),
        FieldSpec("initial-response", "binary", False, False, None),
        FieldSpec("hostname", "string", False, False, None),
    )
    ATTRS = ("mechanism", "initial_response", "hostname")
    DEFAULTS = (None, None, None)

    mechanism: str = _MANDATORY
    initial_response: bytes | None = None
    hostname: str | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class SaslChallenge(Composite):
    """AMQP sasl-challenge (security), descriptor 0x00000042."""

    DESCRIPTOR = ULong(0x00000042)
    DESCRIPTOR_NAME = Symbol("amqp:sasl-challenge:list")
    AMQP_NAME = "sasl-challenge"
    PROVIDES = frozenset({"sasl-frame"})
    _PREFIX = b"\x00\x53\x42"
    FIELDS = (FieldSpec("challenge", "binary", False, True, None),)
    ATTRS = ("challenge",)
    DEFAULTS = (None,)

    challenge: bytes = _MANDATORY


@dataclass(kw_only=True, slots=True, repr=False)
class SaslResponse(Composite):
    """AMQP sasl-response (security), descriptor 0x00000043."""

    DESCRIPTOR = ULong(0x00000043)
    DESCRIPTOR_NAME = Symbol("amqp:sasl-response:list")
    AMQP_NAME = "sasl-response"
    PROVIDES = frozenset({"sasl-frame"})
    _PREFIX = b"\x00\x53\x43"
    FIELDS = (FieldSpec("response", "binary", False, True, None),)
    ATTRS = ("response",)
    DEFAULTS = (None,)

    response: bytes = _MANDATORY


@dataclass(kw_only=True, slots=True, repr=False)
class SaslOutcome(Composite):
    """AMQP sasl-outcome (security), descriptor 0x00000044."""

    DESCRIPTOR = ULong(0x00000044)
    DESCRIPTOR_NAME = Symbol("amqp:sasl-outcome:list")
    AMQP_NAME = "sasl-outcome"
    PROVIDES = frozenset({"sasl-frame"})
    _PREFIX = b"\x00\x53\x44"
    FIELDS = (
        FieldSpec("code", "sasl-code", False, True, None),
        FieldSpec("additional-data", "binary", False, False, None),
    )
    ATTRS = ("code", "additional_data")
    DEFAULTS = (None, None)

    code: int = _MANDATORY
    additional_data: bytes | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class Coordinator(Composite):
    """AMQP coordinator (transactions), descriptor 0x00000030."""

    DESCRIPTOR = ULong(0x00000030)
    DESCRIPTOR_NAME = Symbol("amqp:coordinator:list")
    AMQP_NAME = "coordinator"
    PROVIDES = frozenset({"target"})
    _PREFIX = b"\x00\x53\x30"
    FIELDS = (FieldSpec("capabilities", "symbol", True, False, "txn-capability"),)
    ATTRS = ("capabilities",)
    DEFAULTS = (None,)

    capabilities: list[str] | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class Declare(Composite):
    """AMQP declare (transactions), descriptor 0x00000031."""

    DESCRIPTOR = ULong(0x00000031)
    DESCRIPTOR_NAME = Symbol("amqp:declare:list")
    AMQP_NAME = "declare"
    PROVIDES = frozenset()
    _PREFIX = b"\x00\x53\x31"
    FIELDS = (FieldSpec("global-id", "*", False, False, "global-tx-id"),)
    ATTRS = ("global_id",)
    DEFAULTS = (None,)

    global_id: Any | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class Discharge(Composite):
    """AMQP discharge (transactions), descriptor 0x00000032."""

    DESCRIPTOR = ULong(0x00000032)
    DESCRIPTOR_NAME = Symbol("amqp:discharge:list")
    AMQP_NAME = "discharge"
    PROVIDES = frozenset()
    _PREFIX = b"\x00\x53\x32"
    FIELDS = (
        FieldSpec("txn-id", "*", False, True, "txn-id"),
        FieldSpec("fail", "boolean", False, False, None),
    )
    ATTRS = ("txn_id", "fail")
    DEFAULTS = (None, None)

    txn_id: Any = _MANDATORY
    fail: bool | None = None


@dataclass(kw_only=True, slots=True, repr=False)
class Declared(Composite):
    """AMQP declared (transactions), descriptor 0x00000033."""

    DESCRIPTOR = ULong(0x00000033)
    DESCRIPTOR_NAME = Symbol("amqp:declared:list")
    AMQP_NAME = "declared"
    PROVIDES = frozenset({"delivery-state", "outcome"})
    _PREFIX = b"\x00\x53\x33"
    FIELDS = (FieldSpec("txn-id", "*", False, True, "txn-id"),)
    ATTRS = ("txn_id",)
    DEFAULTS = (None,)

    txn_id: Any = _MANDATORY


@dataclass(kw_only=True, slots=True, repr=False)
class TransactionalState(Composite):
    """AMQP transactional-state (transactions), descriptor 0x00000034."""

    DESCRIPTOR = ULong(0x00000034)
    DESCRIPTOR_NAME = Symbol("amqp:transactional-state:list")
    AMQP_NAME = "transactional-state"
    PROVIDES = frozenset({"delivery-state"})
    _PREFIX = b"\x00\x53\x34"
    FIELDS = (
        FieldSpec("txn-id", "*", False, True, "txn-id"),
        FieldSpec("outcome", "*", False, False, "outcome"),
    )
    ATTRS = ("txn_id", "outcome")
    DEFAULTS = (None, None)

    txn_id: Any = _MANDATORY
    outcome: Any | None = None


# ---------------------------------------------------------------------- message sections


@dataclass(slots=True, repr=False)
class DeliveryAnnotations(Restricted):
    """AMQP delivery-annotations (messaging), descriptor 0x00000071."""

    DESCRIPTOR = ULong(0x00000071)
    DESCRIPTOR_NAME = Symbol("amqp:delivery-annotations:map")
    AMQP_NAME = "delivery-annotations"
    PROVIDES = frozenset({"section"})
    _PREFIX = b"\x00\x53\x71"
    SOURCE = "map"

    value: dict[Any, Any] | None = None


@dataclass(slots=True, repr=False)
class MessageAnnotations(Restricted):
    """AMQP message-annotations (messaging), descriptor 0x00000072."""

    DESCRIPTOR = ULong(0x00000072)
    DESCRIPTOR_NAME = Symbol("amqp:message-annotations:map")
    AMQP_NAME = "message-annotations"
    PROVIDES = frozenset({"section"})
    _PREFIX = b"\x00\x53\x72"
    SOURCE = "map"

    value: dict[Any, Any] | None = None


@dataclass(slots=True, repr=False)
class ApplicationProperties(Restricted):
    """AMQP application-properties (messaging), descriptor 0x00000074."""

    DESCRIPTOR = ULong(0x00000074)
    DESCRIPTOR_NAME = Symbol("amqp:application-properties:map")
    AMQP_NAME = "application-properties"
    PROVIDES = frozenset({"section"})
    _PREFIX = b"\x00\x53\x74"
    SOURCE = "map"

    value: dict[Any, Any] | None = None


@dataclass(slots=True, repr=False)
class Data(Restricted):
    """AMQP data (messaging), descriptor 0x00000075."""

    DESCRIPTOR = ULong(0x00000075)
    DESCRIPTOR_NAME = Symbol("amqp:data:binary")
    AMQP_NAME = "data"
    PROVIDES = frozenset({"section"})
    _PREFIX = b"\x00\x53\x75"
    SOURCE = "binary"

    value: bytes | None = None


@dataclass(slots=True, repr=False)
class AmqpSequence(Restricted):
    """AMQP amqp-sequence (messaging), descriptor 0x00000076."""

    DESCRIPTOR = ULong(0x00000076)
    DESCRIPTOR_NAME = Symbol("amqp:amqp-sequence:list")
    AMQP_NAME = "amqp-sequence"
    PROVIDES = frozenset({"section"})
    _PREFIX = b"\x00\x53\x76"
    SOURCE = "list"

    value: list[Any] | None = None


@dataclass(slots=True, repr=False)
class AmqpValue(Restricted):
    """AMQP amqp-value (messaging), descriptor 0x00000077."""

    DESCRIPTOR = ULong(0x00000077)
    DESCRIPTOR_NAME = Symbol("amqp:amqp-value:*")
    AMQP_NAME = "amqp-value"
    PROVIDES = frozenset({"section"})
    _PREFIX = b"\x00\x53\x77"
    SOURCE = "*"

    value: Any = None


@dataclass(slots=True, repr=False)
class Footer(Restricted):
    """AMQP footer (messaging), descriptor 0x00000078."""

    DESCRIPTOR = ULong(0x00000078)
    DESCRIPTOR_NAME = Symbol("amqp:footer:map")
    AMQP_NAME = "footer"
    PROVIDES = frozenset({"section"})
    _PREFIX = b"\x00\x53\x78"
    SOURCE = "map"

    value: dict[Any, Any] | None = None


# ---------------------------------------------------------------------- tables
# The composite classes by XML name, in the order of the spec.
COMPOSITES: dict[str, type[Composite]] = {
    "open": Open,
    "begin": Begin,
    "attach": Attach,
    "flow": Flow,
    "transfer": Transfer,
    "disposition": Disposition,
    "detach": Detach,
    "end": End,
    "close": Close,
    "error": Error,
    "header": Header,
    "properties": Properties,
    "received": Received,
    "accepted": Accepted,
    "rejected": Rejected,
    "released": Released,
    "modified": Modified,
    "source": Source,
    "target": Target,
    "delete-on-close": DeleteOnClose,
    "delete-on-no-links": DeleteOnNoLinks,
    "delete-on-no-messages": DeleteOnNoMessages,
    "delete-on-no-links-or-messages": DeleteOnNoLinksOrMessages,
    "sasl-mechanisms": SaslMechanisms,
    "sasl-init": SaslInit,
    "sasl-challenge": SaslChallenge,
    "sasl-response": SaslResponse,
    "sasl-outcome": SaslOutcome,
    "coordinator": Coordinator,
    "declare": Declare,
    "discharge": Discharge,
    "declared": Declared,
    "transactional-state": TransactionalState,
}

# The described restricted classes (the sections) by XML name.
SECTION_TYPES: dict[str, type[Restricted]] = {
    "delivery-annotations": DeliveryAnnotations,
    "message-annotations": MessageAnnotations,
    "application-properties": ApplicationProperties,
    "data": Data,
    "amqp-sequence": AmqpSequence,
    "amqp-value": AmqpValue,
    "footer": Footer,
}

# The choice name spaces by XML name.
CHOICE_TYPES: dict[str, type] = {
    "role": Role,
    "sender-settle-mode": SenderSettleMode,
    "receiver-settle-mode": ReceiverSettleMode,
    "terminus-durability": TerminusDurability,
    "terminus-expiry-policy": TerminusExpiryPolicy,
    "std-dist-mode": StdDistMode,
    "sasl-code": SaslCode,
    "txn-capability": TxnCapability,
}

__all__ = [
    "CHOICES",
    "CHOICE_TYPES",
    "COMPOSITES",
    "CONDITIONS",
    "CONNECTION_FORCED",
    "CONNECTION_FRAMING_ERROR",
    "CONNECTION_REDIRECT",
    "DECODE_ERROR",
    "DEFINITIONS",
    "FRAME_SIZE_TOO_SMALL",
    "ILLEGAL_STATE",
    "INTERNAL_ERROR",
    "INVALID_FIELD",
    "LINK_DETACH_FORCED",
    "LINK_MESSAGE_SIZE_EXCEEDED",
    "LINK_REDIRECT",
    "LINK_STOLEN",
    "LINK_TRANSFER_LIMIT_EXCEEDED",
    "MAJOR",
    "MESSAGE_FORMAT",
    "MINOR",
    "MIN_MAX_FRAME_SIZE",
    "NOT_ALLOWED",
    "NOT_FOUND",
    "NOT_IMPLEMENTED",
    "PORT",
    "PRECONDITION_FAILED",
    "RESOURCE_DELETED",
    "RESOURCE_LIMIT_EXCEEDED",
    "RESOURCE_LOCKED",
    "RESTRICTED_SOURCES",
    "REVISION",
    "SASL_MAJOR",
    "SASL_MINOR",
    "SASL_REVISION",
    "SECTION_TYPES",
    "SECURE_PORT",
    "SESSION_ERRANT_LINK",
    "SESSION_HANDLE_IN_USE",
    "SESSION_UNATTACHED_HANDLE",
    "SESSION_WINDOW_VIOLATION",
    "TLS_MAJOR",
    "TLS_MINOR",
    "TLS_REVISION",
    "TRANSACTION_ROLLBACK",
    "TRANSACTION_TIMEOUT",
    "TRANSACTION_UNKNOWN_ID",
    "UNAUTHORIZED_ACCESS",
    "Accepted",
    "AmqpSequence",
    "AmqpValue",
    "ApplicationProperties",
    "Attach",
    "Begin",
    "Close",
    "Coordinator",
    "Data",
    "Declare",
    "Declared",
    "DeleteOnClose",
    "DeleteOnNoLinks",
    "DeleteOnNoLinksOrMessages",
    "DeleteOnNoMessages",
    "DeliveryAnnotations",
    "Detach",
    "Discharge",
    "Disposition",
    "End",
    "Error",
    "Flow",
    "Footer",
    "Header",
    "MessageAnnotations",
    "Modified",
    "Open",
    "Properties",
    "Received",
    "ReceiverSettleMode",
    "Rejected",
    "Released",
    "Role",
    "SaslChallenge",
    "SaslCode",
    "SaslInit",
    "SaslMechanisms",
    "SaslOutcome",
    "SaslResponse",
    "SenderSettleMode",
    "Source",
    "StdDistMode",
    "Target",
    "TerminusDurability",
    "TerminusExpiryPolicy",
    "TransactionalState",
    "Transfer",
    "TxnCapability",
]
