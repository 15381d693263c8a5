"""RabbitMQ's own rabbitmqadmin (the Python script Debian's rabbitmq-server ships), run against a
management port as a user would, but many commands in one process: a command costs a few
milliseconds instead of a Python start-up.

The script keeps its option parser in a module global and exits through `sys.exit`, so each
command runs in a fresh namespace of the compiled script, its stdout and stderr captured and its
exit code kept. The script sets SIGPIPE to its default action when loaded, which is why it runs
in a child process (one JSON request and reply per line), never in the test's own.

A `Masks` rewrites the JSON answers of the API before the script formats them, so a value that
must differ between two brokers (a client's port, a salted hash, memory in use) reads the same
in every output format, table widths included."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

RABBITMQADMIN = Path("/usr/bin/rabbitmqadmin")


def rabbitmqadmin_available() -> bool:
    return RABBITMQADMIN.is_file()


@dataclass(frozen=True)
class Outcome:
    """What one command printed and how it exited."""

    stdout: str
    stderr: str
    code: int

    @property
    def text(self) -> str:
        return f"{self.stdout}{self.stderr}[exit {self.code}]"


@dataclass(frozen=True)
class Masks:
    """How answers are rewritten: keys dropped (a name ending in `*` drops every key with that
    prefix, one starting with `*` every key with that suffix), keys whose value is replaced by
    `<key>`, and regular expressions substituted in every string (keys included)."""

    drop: tuple[str, ...] = ()
    mask: tuple[str, ...] = ()
    substitute: tuple[tuple[str, str], ...] = field(default_factory=tuple)


class Rabbitmqadmin:
    """rabbitmqadmin pointed at one management port as guest; `run(*args)` runs one command,
    e.g. `run("-f", "tsv", "list", "queues")`."""

    def __init__(
        self, port: int, workdir: Path, masks: Masks = Masks(), script: Path = RABBITMQADMIN
    ) -> None:
        self.base = ["rabbitmqadmin", "-H", "127.0.0.1", "-P", str(port)]
        self.base += ["-u", "guest", "-p", "guest"]
        self.workdir = workdir  # where `export` writes and `import` reads files
        self._child = subprocess.Popen(
            [sys.executable, __file__, str(script), json.dumps(asdict(masks))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=workdir,
            text=True,
        )

    def run(self, *args: str, stdin: str = "") -> Outcome:
        assert self._child.stdin is not None and self._child.stdout is not None
        request = {"argv": [*self.base, *args], "stdin": stdin}
        self._child.stdin.write(json.dumps(request) + "\n")
        self._child.stdin.flush()
        reply = json.loads(self._child.stdout.readline())
        return Outcome(reply["stdout"], reply["stderr"], reply["code"])

    def close(self) -> None:
        assert self._child.stdin is not None
        self._child.stdin.close()
        try:
            self._child.wait(10)
        except subprocess.TimeoutExpired:
            self._child.kill()
            self._child.wait()


# ---------------------------------------------------------------------- the child process
def _rewrite(value: Any, masks: Masks, patterns: list[tuple[re.Pattern[str], str]]) -> Any:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if _dropped(key, masks.drop):
                continue
            rewritten = f"<{key}>" if key in masks.mask else _rewrite(item, masks, patterns)
            out[_rewrite(key, masks, patterns)] = rewritten  # keys too: cluster_state's
        return out
    if isinstance(value, list):
        return [_rewrite(item, masks, patterns) for item in value]
    if isinstance(value, str):
        for pattern, replacement in patterns:
            value = pattern.sub(replacement, value)
    return value


def _dropped(key: str, drop: tuple[str, ...]) -> bool:
    for rule in drop:
        if rule.endswith("*") and key.startswith(rule[:-1]):
            return True
        if rule.startswith("*") and key.endswith(rule[1:]):
            return True
        if key == rule:
            return True
    return False


def _serve(script: Path, masks: Masks) -> None:
    """Run each request line through a fresh copy of the script, its answers rewritten."""
    code = compile(script.read_text(), str(script), "exec")
    patterns = [(re.compile(p), r) for p, r in masks.substitute]
    requests = sys.stdin
    for line in requests:
        request = json.loads(line)
        out, err = io.StringIO(), io.StringIO()
        status = 0
        sys.argv = request["argv"]
        sys.stdin = io.StringIO(request["stdin"])
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                namespace: dict[str, Any] = {"__name__": "rabbitmqadmin", "__file__": str(script)}
                exec(code, namespace)
                management = namespace["Management"]
                http = management.http

                def rewritten(
                    self: Any, method: str, path: str, body: str, http: Any = http
                ) -> str:
                    text = http(self, method, path, body)
                    try:
                        doc = json.loads(text)
                    except ValueError:
                        return text
                    return json.dumps(_rewrite(doc, masks, patterns), ensure_ascii=False)

                management.http = rewritten
                namespace["main"]()
            except SystemExit as exit_:
                status = exit_.code if isinstance(exit_.code, int) else 1
            except BaseException:  # an uncaught error: print it as Python would, exit 1
                traceback.print_exc()
                status = 1
        reply = {"stdout": out.getvalue(), "stderr": err.getvalue(), "code": status}
        sys.__stdout__.write(json.dumps(reply) + "\n")
        sys.__stdout__.flush()


if __name__ == "__main__":
    fields = json.loads(sys.argv[2])
    _serve(
        Path(sys.argv[1]),
        Masks(
            tuple(fields["drop"]),
            tuple(fields["mask"]),
            tuple((p, r) for p, r in fields["substitute"]),
        ),
    )
