"""Recording helpers for aiormq scenarios and for the raw socket client.

aiormq exceptions carry only the reply text; the code is recovered from aiormq's own code to
exception mapping. The raw client is for what only the wire shows: the order of frames (a
basic.return before tx.commit-ok) and replies to input no client library would send."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any

import aiormq
import aiormq.exceptions
from aiormq.channel import EXCEPTION_MAPPING as CHANNEL_CODES
from aiormq.connection import EXCEPTION_MAPPING as CONNECTION_CODES

from compat_matrix.record import jsonable
from compat_matrix.session import CLOSED, WAIT, Session

_CODE_OF = {cls: code for code, cls in (*CHANNEL_CODES.items(), *CONNECTION_CODES.items())}


def describe_frame(frame: Any) -> Any:
    """A pamqp frame (or aiormq's delivered message) as a JSON value."""
    if isinstance(frame, aiormq.abc.DeliveredMessage):
        if getattr(frame.delivery, "name", "") == "Basic.GetEmpty":
            return "empty"
        return {"message": jsonable(frame.body), "redelivered": frame.redelivered}
    name = getattr(frame, "name", None)
    if name is None:
        return jsonable(frame)
    return {"method": name, **{k: jsonable(v) for k, v in frame}}


def describe_aio_error(exc: BaseException) -> list[Any]:
    """Scope, code and text of an aiormq error, as for pika."""
    text = exc.args[-1] if exc.args else ""
    if isinstance(exc, aiormq.exceptions.PublishError):
        return ["returned", exc.frame.reply_code, exc.frame.reply_text]
    code = _CODE_OF.get(type(exc))
    if code is None and len(exc.args) == 2 and isinstance(exc.args[0], int):
        code = exc.args[0]
    if isinstance(exc, aiormq.exceptions.AMQPChannelError):
        return ["channel-closed", code, text]
    if isinstance(exc, aiormq.exceptions.ConnectionClosed):
        return ["connection-closed", code, text]
    return ["raised", type(exc).__name__]


async def connect(session: Session) -> aiormq.abc.AbstractConnection:
    """An aiormq connection closed when the scenario ends."""
    conn = await aiormq.connect(session.url)
    session.async_cleanups.append(conn.close)
    return conn


async def attempt(session: Session, label: str, call: Awaitable[Any]) -> Any:
    """Await one aiormq call; log its reply or how the broker refused it (CLOSED)."""
    try:
        result = await asyncio.wait_for(call, WAIT)
    except (aiormq.exceptions.AMQPError, ConnectionError) as exc:
        session.log(label, describe_aio_error(exc))
        return CLOSED
    session.log(label, ["ok", describe_frame(result)])
    return result


async def wait_for(session: Session, box: list[Any], count: int) -> None:
    """Wait until `box` holds `count` items (deliveries appended by a consumer callback)."""
    deadline = time.monotonic() + WAIT
    while len(box) < count and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


# ---------------------------------------------------------------------- raw client
def frame_name(value: Any) -> str:
    return str(getattr(value, "name", type(value).__name__))


def frames(raw: Any, until: str | None, timeout: float = WAIT) -> list[str]:
    """Names of the frames that arrive, up to and including `until` (or until the socket closes
    or `timeout` passes; then "closed" / "timeout" ends the list)."""
    names: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return [*names, "timeout"]
        try:
            got = raw.read_frame(remaining)
        except TimeoutError:
            return [*names, "timeout"]
        except OSError:
            return [*names, "closed"]
        if got is None:
            return [*names, "closed"]
        channel, value = got
        name = frame_name(value)
        if name in ("Connection.Close", "Channel.Close"):
            name += f" {value.reply_code} {value.reply_text} {value.class_id}/{value.method_id}"
        names.append(f"{channel}:{name}")
        if until is not None and frame_name(value) == until:
            return names


def outcome(raw: Any, timeout: float = WAIT) -> list[Any]:
    """How the broker ended things: [scope, code, text, class/method] or the socket closing."""
    try:
        closed = raw.wait_closed(timeout)
    except TimeoutError:
        return ["nothing"]
    except OSError:
        return ["socket-closed"]
    if closed is None:
        return ["socket-closed"]
    return [
        closed.scope,
        closed.reply_code,
        closed.reply_text,
        f"{closed.class_id}/{closed.method_id}",
    ]


def closed_within(raw: Any, timeout: float) -> bool:
    """Whether the broker drops the socket within `timeout` seconds."""
    try:
        return bool(raw.socket_closed(timeout))
    except OSError:
        return True
