"""HTTP errors with RabbitMQ's management bodies: `{"error": ..., "reason": ...}`, where the
reason is sometimes text and sometimes a rendered Erlang term."""

from __future__ import annotations

from typing import Any

from rabbitish.engine import erlang_terms
from rabbitish.engine.errors import AMQPError

NOT_FOUND_BODY = {"error": "Object Not Found", "reason": "Not Found"}
ACCESS_REFUSED = "Access refused."


class ApiError(Exception):
    def __init__(self, status: int, error: str | None = None, reason: Any = None) -> None:
        super().__init__(status, error, reason)
        self.status = status
        self.error = error
        self.reason = reason

    @property
    def body(self) -> dict[str, Any] | None:
        if self.error is None:
            return None
        return {"error": self.error, "reason": self.reason}


def not_found() -> ApiError:
    return ApiError(404, NOT_FOUND_BODY["error"], NOT_FOUND_BODY["reason"])


def bad_request(reason: Any) -> ApiError:
    return ApiError(400, "bad_request", reason)


def not_authorised() -> ApiError:
    return ApiError(401, "not_authorised", ACCESS_REFUSED)


def vhost_refused() -> ApiError:
    return ApiError(401, "not_authorised", "User not authorised to access virtual host")


def not_administrator() -> ApiError:
    return ApiError(401, "not_authorised", "Not administrator user")


def not_monitor() -> ApiError:
    return ApiError(401, "not_authorised", "Not monitor user")


def key_missing(keys: list[str]) -> ApiError:
    """RabbitMQ's `[{key_missing,K},...]`, printed with ~p."""
    return bad_request(erlang_terms.term_list([f"{{key_missing,{key}}}" for key in keys]))


def from_declare(error: AMQPError) -> ApiError:
    """An engine error from declare / delete / purge / bind: RabbitMQ answers 401 for access
    refused, 404 for a missing object and 400 with the bare text for everything else."""
    if error.reply_code == 403:
        return not_authorised()
    if error.reply_code == 404:
        return ApiError(404, "not_found", error.text)
    return bad_request(error.text)


def wire_text(error: AMQPError) -> str:
    """The reply text as a channel.close carries it: at most 255 bytes, longer ones cut to
    252 plus "..." (RabbitMQ's management API reports what its channel received)."""
    text = error.reply_text.encode()
    if len(text) > 255:
        text = text[:252] + b"..."
    return text.decode("utf-8", "replace")


def from_channel(error: AMQPError) -> ApiError:
    """An engine error from a get (RabbitMQ runs it on a channel): 404 keeps its AMQP reply
    text, other codes become 400 with the code in front."""
    if error.reply_code == 404:
        return ApiError(404, "not_found", wire_text(error))
    if error.reply_code == 403:
        return ApiError(401, "not_authorised", wire_text(error))
    return bad_request(f"{error.reply_code} {wire_text(error)}")


def from_publish(error: AMQPError) -> ApiError:
    """Publish errors are all 400 with the code and reply text, even a missing exchange."""
    return bad_request(f"{error.reply_code} {wire_text(error)}")
