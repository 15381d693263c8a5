"""What every verb works with: the parsed command line, the printer, the management API (with
the node-down and refusal errors rabbitmqctl would give) and rabbitmqctl's exit codes."""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from typing import Any

from rabbitish.cli.client import DEFAULT_URL, ApiFailure, Client, CliError
from rabbitish.cli.ctl.arguments import Invocation
from rabbitish.cli.ctl.listings import BROKER_NODE
from rabbitish.cli.ctl.output import Printer

# rabbitmqctl's exit codes (BSD sysexits, as the real tools use them)
EX_OK = 0
EX_USAGE = 64
EX_DATAERR = 65
EX_NOUSER = 67
EX_UNAVAILABLE = 69
EX_SOFTWARE = 70


class CtlError(Exception):
    """Ends the verb: `text` on standard error, `code` as the exit status."""

    def __init__(self, code: int, text: str) -> None:
        super().__init__(text)
        self.code = code
        self.text = text


class NodeDown(CtlError):
    """No management API answers: the broker is not (yet) running there."""


def node_down(node: str, reason: str) -> NodeDown:
    """rabbitmqctl's "unable to perform an operation" error, with the management API's URL where
    it lists what it tried."""
    return NodeDown(
        EX_UNAVAILABLE,
        f"Error: unable to perform an operation on node '{node}'. Please see diagnostics "
        "information and suggestions below.\n\n"
        "Most common reasons for this are:\n\n"
        " * Target node is unreachable (e.g. due to hostname resolution, TCP connection or "
        "firewall issues)\n"
        " * Target node is not running\n\n"
        "In addition to the diagnostics info below:\n\n"
        " * rabbitish's tools reach the node through its management API: pass --url or set "
        "RABBITISH_URL (-n only names the node)\n\n"
        "DIAGNOSTICS\n===========\n\n"
        f"attempted to contact: ['{node}']\n\n"
        f"{node}:\n  * {reason}\n",
    )


def refused(reason: Any) -> CtlError:
    """An API refusal as `Error:` and the reason (the API escapes it for HTML; the CLI does not)."""
    text = reason if isinstance(reason, str) else str(reason)
    return CtlError(EX_UNAVAILABLE, "Error:\n" + html.unescape(text))


@dataclass
class Context:
    """One run of a verb: its command line, where it prints, and the management API it calls
    (`--url`, else `RABBITISH_URL`, else the default URL)."""

    invocation: Invocation
    printer: Printer

    @property
    def node(self) -> str:
        """The node named in messages: -n's, else the broker's own name."""
        return self.invocation.values.get("node", BROKER_NODE)

    @property
    def url(self) -> str:
        return self.invocation.values.get("url") or os.environ.get("RABBITISH_URL", DEFAULT_URL)

    def client(self, timeout: float | None = None) -> Client:
        seconds = timeout if timeout is not None else self.timeout(60.0)
        try:
            return Client(self.url, timeout=seconds)
        except CliError as err:
            raise CtlError(EX_USAGE, f"Error: {err.message}") from None

    def timeout(self, default: float) -> float:
        raw = self.invocation.values.get("timeout")
        try:
            return float(raw) if raw is not None else default
        except ValueError:
            raise CtlError(EX_USAGE, f"Error: invalid timeout: {raw}") from None

    def call(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> Any:
        """The API's answer; unreachable -> node down (69), other refusals stay ApiFailure for
        the verb to word as RabbitMQ does."""
        client = self.client()
        try:
            answer = client.request(method, path, body, headers=headers)
        except ApiFailure as failure:
            self.printer.reached()
            if failure.status == 401:  # the node is up: a refusal, not a node down
                reason = f"the management API at {client.display} refused the login (401)"
                down = node_down(self.node, reason)
                raise CtlError(down.code, down.text) from None
            raise
        except CliError as err:
            raise node_down(self.node, err.message) from None
        self.printer.reached()
        return answer

    def get(self, path: str) -> Any:
        return self.call("GET", path)

    def checked(
        self, method: str, path: str, body: Any = None, *, missing: CtlError | None = None
    ) -> Any:
        """`call` for verbs that word every refusal alike: a 404 raises `missing` where the
        verb has its own text for it, any other refusal the API's reason (`refused`)."""
        try:
            return self.call(method, path, body)
        except ApiFailure as failure:
            if missing is not None and failure.status == 404:
                raise missing from None
            raise refused(failure.reason) from None

    def exists(self, path: str) -> bool:
        try:
            self.get(path)
        except ApiFailure as failure:
            if failure.status == 404:
                return False
            raise refused(failure.reason) from None
        return True
