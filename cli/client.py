"""A small client for the management HTTP API (stdlib only, so the command line starts fast):
JSON in and out, Basic auth from the URL, and failures turned into one-line errors with exit
codes scripts can rely on."""

from __future__ import annotations

import base64
import json
import socket
import ssl
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote, urlsplit

DEFAULT_URL = "http://guest:guest@127.0.0.1:15672"
TIMEOUT = 30.0

# Exit codes (documented in docs/cli.md).
OK = 0
REFUSED = 1  # the broker answered with an error (not found, precondition, bad request ...)
USAGE = 2  # bad command line (typer/click's own code)
UNREACHABLE = 3  # no management API at the URL
AUTH = 4  # wrong user or password


class CliError(Exception):
    """Ends the command with a one-line message and an exit code."""

    def __init__(self, message: str, code: int = REFUSED) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class ApiFailure(CliError):
    """The API answered with an error status."""

    def __init__(self, status: int, error: str, reason: Any) -> None:
        self.status = status
        self.error = error
        self.reason = reason
        text = reason if isinstance(reason, str) else json.dumps(reason)
        super().__init__(f"{status} {error}: {text}", AUTH if status == 401 else REFUSED)


def segment(name: str) -> str:
    """One path segment: vhost and object names are escaped entirely ('/' too)."""
    return quote(name, safe="")


class Client:
    def __init__(self, url: str = DEFAULT_URL, timeout: float = TIMEOUT) -> None:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        if not parts.hostname:
            raise CliError(f"not a management URL: {url!r}", USAGE)
        user = parts.username or "guest"
        password = parts.password or "guest"
        self.user = user  # whom the API acts for
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        port = parts.port or 15672
        self.base = f"{parts.scheme}://{host}:{port}{parts.path.rstrip('/')}"
        self.display = f"{parts.scheme}://{host}:{port}"
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        self.headers = {"Authorization": f"Basic {token}", "Content-Type": "application/json"}
        self.timeout = timeout

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        missing: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """Call the API; the decoded JSON answer (None for an empty one). With `missing` (what
        `path` names, e.g. "queue 'q' in vhost '/'"), a 404 ends the command with "no <missing>"
        instead of the API's own words. `headers` are sent as well (X-Reason on a close)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.base + path, data=data, method=method, headers={**self.headers, **(headers or {})}
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as err:
            failure = _failure(err)
            if missing is not None and failure.status == 404:
                raise CliError(f"no {missing}") from None
            raise failure from None
        except (urllib.error.URLError, OSError) as err:
            # URLError and ssl's errors say why in `reason`; other OSErrors are the reason.
            reason = err.reason if isinstance(err, urllib.error.URLError | ssl.SSLError) else err
            if isinstance(reason, socket.timeout | TimeoutError):
                reason = "timed out"
            elif isinstance(reason, OSError) and reason.strerror:
                reason = reason.strerror.lower()
            raise CliError(
                f"cannot reach the management API at {self.display} ({reason}); "
                "is the broker running with its management port?",
                UNREACHABLE,
            ) from None
        return json.loads(raw) if raw.strip() else None

    def get(self, path: str, *, missing: str | None = None) -> Any:
        return self.request("GET", path, missing=missing)


def _failure(err: urllib.error.HTTPError) -> ApiFailure:
    raw = err.read()
    try:
        body = json.loads(raw) if raw.strip() else {}
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    error = str(body.get("error") or err.reason or "error")
    reason = body.get("reason") or ("login required" if err.code == 401 else "")
    return ApiFailure(err.code, error, reason)


def amqp_answers(host: str, port: int, timeout: float = 2.0) -> bool:
    """Whether the port answers an AMQP 0-9-1 protocol header with connection.start (a method
    frame): the readiness probe both command lines use for the AMQP listener."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"AMQP\x00\x00\x09\x01")
            sock.settimeout(timeout)
            return sock.recv(1)[:1] == b"\x01"
    except OSError:
        return False
