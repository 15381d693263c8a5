"""Errors carrying an AMQP reply code. They live in the engine because the engine detects most of
them; the 0-9-1 front end sends the code as is and the 1.0 bridge maps it to a 1.0 condition."""

from __future__ import annotations

import logging
import sys

# Reply codes (AMQP 0-9-1 constants).
REPLY_SUCCESS = 200
CONTENT_TOO_LARGE = 311
NO_ROUTE = 312
NO_CONSUMERS = 313
CONNECTION_FORCED = 320
INVALID_PATH = 402
ACCESS_REFUSED = 403
NOT_FOUND = 404
RESOURCE_LOCKED = 405
PRECONDITION_FAILED = 406
FRAME_ERROR = 501
SYNTAX_ERROR = 502
COMMAND_INVALID = 503
CHANNEL_ERROR = 504
UNEXPECTED_FRAME = 505
RESOURCE_ERROR = 506
NOT_ALLOWED = 530
NOT_IMPLEMENTED = 540
INTERNAL_ERROR = 541

REPLY_NAMES = {
    200: "REPLY_SUCCESS",
    311: "CONTENT_TOO_LARGE",
    312: "NO_ROUTE",
    313: "NO_CONSUMERS",
    320: "CONNECTION_FORCED",
    402: "INVALID_PATH",
    403: "ACCESS_REFUSED",
    404: "NOT_FOUND",
    405: "RESOURCE_LOCKED",
    406: "PRECONDITION_FAILED",
    501: "FRAME_ERROR",
    502: "SYNTAX_ERROR",
    503: "COMMAND_INVALID",
    504: "CHANNEL_ERROR",
    505: "UNEXPECTED_FRAME",
    506: "RESOURCE_ERROR",
    530: "NOT_ALLOWED",
    540: "NOT_IMPLEMENTED",
    541: "INTERNAL_ERROR",
}

# Codes that close the whole connection in RabbitMQ ("hard" errors).
HARD_CODES = frozenset({320, 402, 501, 502, 503, 504, 505, 506, 530, 540, 541})


class AMQPError(Exception):
    """An error with an AMQP reply code. `text` is the detail; `reply_text` adds the name prefix
    the way RabbitMQ formats it: ``NOT_FOUND - no queue 'x' in vhost '/'``."""

    def __init__(self, reply_code: int, text: str, class_id: int = 0, method_id: int = 0) -> None:
        super().__init__(text)
        self.reply_code = reply_code
        self.text = text
        self.class_id = class_id
        self.method_id = method_id
        self.located = bool(class_id)  # the causing method is known (0/0 can be deliberate)

    @property
    def reply_text(self) -> str:
        """RabbitMQ's format; an error with no detail (internal errors) is the bare name."""
        name = REPLY_NAMES.get(self.reply_code, "ERROR")
        return f"{name} - {self.text}" if self.text else name

    @property
    def is_hard(self) -> bool:
        return self.reply_code in HARD_CODES

    def at(self, class_id: int, method_id: int) -> AMQPError:
        """Fill in the method that caused the error, unless already set (the innermost
        caller knows best; `.at(0, 0)` pins "no method", as RabbitMQ reports internal errors)."""
        if not self.located:
            self.class_id, self.method_id = class_id, method_id
            self.located = True
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.reply_code}, {self.text!r})"


class ChannelError(AMQPError):
    """Closes only the channel (soft error), unless the code is a hard one."""


class ConnectionError_(AMQPError):
    """Closes the whole connection."""


def resource_text(kind: str, name: str, vhost: str) -> str:
    """RabbitMQ's rendering of a resource in error texts: ``queue 'q' in vhost '/'``."""
    return f"{kind} '{name}' in vhost '{vhost}'"


def not_found(text: str) -> ChannelError:
    return ChannelError(NOT_FOUND, text)


def precondition_failed(text: str) -> ChannelError:
    return ChannelError(PRECONDITION_FAILED, text)


MAX_MESSAGE_SIZE = 536_870_912  # RabbitMQ's ?MAX_MSG_SIZE: no configured limit goes above it


def message_too_large(size: int, limit: int) -> ChannelError:
    """A body above max_message_size, in RabbitMQ's words (which name the hard limit apart)."""
    which = "max size" if limit == MAX_MESSAGE_SIZE else "configured max size"
    return precondition_failed(f"message size {size} is larger than {which} {limit}")


def access_refused(text: str) -> ChannelError:
    return ChannelError(ACCESS_REFUSED, text)


def resource_locked(text: str) -> ChannelError:
    return ChannelError(RESOURCE_LOCKED, text)


def not_implemented(text: str) -> ConnectionError_:
    return ConnectionError_(NOT_IMPLEMENTED, text)


def command_invalid(text: str) -> ConnectionError_:
    return ConnectionError_(COMMAND_INVALID, text)


def frame_error(text: str) -> ConnectionError_:
    return ConnectionError_(FRAME_ERROR, text)


def channel_error(text: str) -> ConnectionError_:
    return ConnectionError_(CHANNEL_ERROR, text)


def unexpected_frame(text: str) -> ConnectionError_:
    return ConnectionError_(UNEXPECTED_FRAME, text)


def syntax_error(text: str) -> ConnectionError_:
    return ConnectionError_(SYNTAX_ERROR, text)


def log_unexpected(logger: logging.Logger, where: str) -> None:
    """Log the exception being handled, which client input caused, in one line: a client
    controls its input, so a traceback per connection would let it fill the log. The
    traceback goes to debug level; the exception rides on the record (`unexpected`)."""
    exc = sys.exc_info()[1]
    text = f"{type(exc).__name__}: {exc}"
    if len(text) > 300:
        text = text[:300] + "..."
    logger.error("internal error on %s: %s", where, text, extra={"unexpected": exc})
    logger.debug("internal error on %s", where, exc_info=True)
