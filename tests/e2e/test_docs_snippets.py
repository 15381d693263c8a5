"""Every ```python block of the docs in `DOCS` (docs/transactions.md, docs/amqp10.md), run as a
script of its own: the examples there are what users copy, so each must work as written and
check its own outcome (exit 0).

All blocks run in document order, doc after doc, against one `rabbitish serve` process
(temporary data dir, the management API on, fixed ports for its whole life), each with
`AMQP_URL`, `AMQP10_URL` and `MANAGEMENT_URL` in its environment. Words after `python` in the
fence line say more:
`rabbitmq` runs the block against a real RabbitMQ too (when installed; only `AMQP_URL` is set
there), `restart` runs it after the broker was killed with SIGKILL and started again on the
same data dir and ports, for recovery after a crash. Any other info string (```text,
```console, ```sh) is not run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.ports import ReservedPort

DOCS = ("docs/transactions.md", "docs/amqp10.md")
ROOT = Path(__file__).resolve().parents[2]
BLOCK_TIMEOUT = 60.0  # seconds per block; the slowest waits a few seconds for a status check
OPTIONS = frozenset({"rabbitmq", "restart"})

_FENCE = re.compile(r"^```(?P<info>.*)$")


@dataclass(frozen=True)
class Snippet:
    """One ```python block: where it is, what it says, how to run it."""

    where: str  # the doc, e.g. docs/amqp10.md
    heading: str
    index: int  # 1, 2 ... within its heading
    line: int  # of its first code line in the doc
    code: str
    options: frozenset[str]

    @property
    def id(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.heading.lower()).strip("-")
        doc = Path(self.where).stem
        return f"{slug}-{self.index}" if doc == "transactions" else f"{doc}-{slug}-{self.index}"

    def script(self) -> str:
        """The code, shifted so the line numbers of a traceback are the doc's."""
        return "\n" * (self.line - 1) + self.code


def snippets(text: str, where: str) -> list[Snippet]:
    """The ```python blocks of `text` in order, each under its nearest heading. A fence that
    looks like Python but is not exactly `python` plus known options fails here, so a typo
    cannot turn a test off."""
    found: list[Snippet] = []
    heading, counts = "top", dict[str, int]()
    lines = text.splitlines()
    number = 0
    while number < len(lines):
        fence = _FENCE.match(lines[number])
        if fence is None:
            if lines[number].startswith("#"):
                heading = lines[number].lstrip("#").strip()
            number += 1
            continue
        words = fence["info"].split()
        end = next((i for i in range(number + 1, len(lines)) if lines[i].startswith("```")), None)
        if end is None:
            raise ValueError(f"{where}:{number + 1}: code block never closed")
        if words and words[0].startswith("py"):
            if words[0] != "python" or not OPTIONS.issuperset(words[1:]):
                raise ValueError(
                    f"{where}:{number + 1}: fence {lines[number]!r}: expected ```python "
                    f"with options from {sorted(OPTIONS)}"
                )
            counts[heading] = counts.get(heading, 0) + 1
            code = "\n".join(lines[number + 1 : end]) + "\n"
            found.append(
                Snippet(where, heading, counts[heading], number + 2, code, frozenset(words[1:]))
            )
        number = end + 1
    return found


SNIPPETS = [snippet for where in DOCS for snippet in snippets((ROOT / where).read_text(), where)]


def _cases() -> Iterator[object]:
    for snippet in SNIPPETS:
        yield pytest.param(snippet, "rabbitish", id=snippet.id)
        if "rabbitmq" in snippet.options:
            yield pytest.param(
                snippet, "rabbitmq", id=f"{snippet.id}-rabbitmq", marks=pytest.mark.rabbitmq
            )


@dataclass
class DocBroker:
    """The one rabbitish the blocks share, and the URLs they get."""

    process: BrokerProcess
    management_port: int

    def env(self) -> dict[str, str]:
        port = self.process.port
        return {
            "AMQP_URL": self.process.url,
            "AMQP10_URL": f"amqp://guest:guest@127.0.0.1:{port}",
            "MANAGEMENT_URL": f"http://guest:guest@127.0.0.1:{self.management_port}",
        }

    def crash_and_restart(self) -> None:
        self.process.kill()
        self.process.start()


@pytest.fixture(scope="module")
def doc_broker(tmp_path_factory) -> Iterator[DocBroker]:
    data_dir = tmp_path_factory.mktemp("docs-snippets-data")
    with ReservedPort() as management:
        process = BrokerProcess(
            "--management-port", str(management.port), data_dir=data_dir, keep_port=True
        )
        with process:
            yield DocBroker(process, management.port)


def test_the_doc_has_runnable_blocks():
    for where in DOCS:
        assert sum(s.where == where for s in SNIPPETS) >= 3, where
    assert len(SNIPPETS) >= 10, [s.id for s in SNIPPETS]
    assert len({s.id for s in SNIPPETS}) == len(SNIPPETS)
    for snippet in SNIPPETS:  # a syntax error names its line in the doc
        compile(snippet.script(), snippet.where, "exec")
        assert not {"rabbitmq", "restart"} <= snippet.options, (
            f"{snippet.id}: a restart block runs against rabbitish only"
        )


@pytest.mark.parametrize(("snippet", "target"), list(_cases()))
def test_snippet(snippet: Snippet, target: str, request, tmp_path):
    if target == "rabbitmq":
        # Empty, not unset: a block that reaches for them fails instead of trying localhost.
        env = {
            "AMQP_URL": request.getfixturevalue("rabbitmq_url"),
            "AMQP10_URL": "",
            "MANAGEMENT_URL": "",
        }
    else:
        broker: DocBroker = request.getfixturevalue("doc_broker")
        if "restart" in snippet.options:
            broker.crash_and_restart()
        env = broker.env()
    script = tmp_path / f"{snippet.id}.py"
    script.write_text(snippet.script())
    try:
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{snippet.where} line {snippet.line}: still running after {BLOCK_TIMEOUT} s")
    if done.returncode != 0:  # the traceback's line numbers are the doc's
        pytest.fail(
            f"{snippet.where} line {snippet.line} on {target} exited with {done.returncode}:\n"
            f"{done.stdout}{done.stderr}",
            pytrace=False,
        )
    if target == "rabbitish":
        process = request.getfixturevalue("doc_broker").process
        assert process.proc.poll() is None, f"the broker died:\n{process.output()[-3000:]}"
