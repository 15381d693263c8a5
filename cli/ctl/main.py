"""Entry points of `rabbitish ctl`, `rabbitish diagnostics` and the `rabbitmqctl` /
`rabbitmq-diagnostics` aliases (the rabbitish-ctl-aliases distribution): parse, check the verb's
arguments as rabbitmqctl does (usage errors exit 64), run it, and turn its error into standard
error and an exit code. Imports only the standard library and this package, so a script that
calls it in a loop pays little for start-up."""

from __future__ import annotations

import sys

from rabbitish.cli.ctl.arguments import Invocation, UsageError, parse, verb_options
from rabbitish.cli.ctl.context import EX_OK, EX_USAGE, Context, CtlError, NodeDown
from rabbitish.cli.ctl.node import (
    await_startup,
    check_port_connectivity,
    check_running,
    ping,
    status,
)
from rabbitish.cli.ctl.output import Printer
from rabbitish.cli.ctl.verbs import VERBS, Verb

CTL_VERBS: dict[str, Verb] = {
    **VERBS,
    "await_startup": Verb(
        await_startup,
        (0, 0),
        "rabbitmqctl [--node <node>] [--longnames] [--quiet] await_startup [--timeout <timeout>]",
    ),
    "status": Verb(status, (0, 0), "rabbitmqctl [--node <node>] [--longnames] [--quiet] status"),
}
_DIAGNOSTICS_HEAD = "rabbitmq-diagnostics [--node <node>] [--longnames] [--quiet]"
DIAGNOSTICS_VERBS: dict[str, Verb] = {
    "ping": Verb(ping, (0, 0), f"{_DIAGNOSTICS_HEAD} ping"),
    "check_running": Verb(check_running, (0, 0), f"{_DIAGNOSTICS_HEAD} check_running"),
    "check_port_connectivity": Verb(
        check_port_connectivity, (0, 0), f"{_DIAGNOSTICS_HEAD} check_port_connectivity"
    ),
    "status": CTL_VERBS["status"],
}
_GENERAL = "[--node <node>] [--url <management URL>] [--timeout <timeout>] [--quiet]"


def _overview_usage(tool: str, verbs: dict[str, Verb]) -> str:
    names = "\n".join(f"   {name}" for name in sorted(verbs))
    return (
        f"\x1b[1mUsage\x1b[0m\n\n{tool} {_GENERAL} <command> [<command options>]\n\n"
        f"Available commands:\n\n{names}\n"
    )


def _argument_error(invocation: Invocation, message: str, verb: Verb) -> str:
    return (
        f"Error (argument validation): {message}\nArguments given:\n\t{invocation.given()}\n\n"
        f"\x1b[1mUsage\x1b[0m\n\n{verb.usage}\n"
    )


def _check(invocation: Invocation, verb: Verb) -> str | None:
    """What rabbitmqctl's argument validation would say about this invocation, if anything."""
    extra = sorted(verb_options(invocation) - verb.options)
    if invocation.unknown or extra:
        spelled = [*invocation.unknown, *(f"--{name.replace('_', '-')}" for name in extra)]
        return "Invalid options for this command:\n" + "\n".join(f"{o} : " for o in spelled)
    least, most = verb.arity
    if len(invocation.args) < least:
        return "not enough arguments."
    if most is not None and len(invocation.args) > most:
        return "too many arguments."
    return None


def run(tool: str, verbs: dict[str, Verb], argv: list[str] | None = None) -> int:
    """Run one command line of `tool`; the exit code."""
    words = sys.argv[1:] if argv is None else list(argv)
    try:
        invocation = parse(words)
    except UsageError as err:
        sys.stderr.write(f"Error: {err}\n\n{_overview_usage(tool, verbs)}")
        return EX_USAGE
    if invocation.verb is None or "help" in invocation.flags or invocation.verb == "help":
        topic = invocation.args[0] if invocation.verb == "help" and invocation.args else None
        chosen = verbs.get(topic or invocation.verb or "")
        text = f"\x1b[1mUsage\x1b[0m\n\n{chosen.usage}\n" if chosen else None
        sys.stdout.write(text or _overview_usage(tool, verbs))
        return EX_OK if invocation.verb is not None else EX_USAGE
    verb = verbs.get(invocation.verb)
    if verb is None:
        sys.stderr.write(
            f"\nCommand '{invocation.verb}' not found. \n\n{_overview_usage(tool, verbs)}"
        )
        return EX_USAGE
    problem = _check(invocation, verb)
    if problem is not None:
        sys.stderr.write(_argument_error(invocation, problem, verb))
        return EX_USAGE
    printer: Printer | None = None
    try:
        printer = Printer(invocation)
        verb.run(Context(invocation, printer))
    except UsageError as err:
        sys.stderr.write(_argument_error(invocation, err.message, verb))
        return err.code
    except CtlError as err:
        if printer is not None and not isinstance(err, NodeDown):
            printer.reached()  # a refusal: the node answered
        sys.stdout.flush()
        sys.stderr.write(err.text + "\n")
        return err.code
    except KeyboardInterrupt:
        return 130
    printer.reached()
    return EX_OK


def rabbitmqctl(argv: list[str] | None = None) -> int:
    """`rabbitmqctl ...` and `rabbitish ctl ...`."""
    return run("rabbitmqctl", CTL_VERBS, argv)


def diagnostics(argv: list[str] | None = None) -> int:
    """`rabbitmq-diagnostics ...` and `rabbitish diagnostics ...`."""
    return run("rabbitmq-diagnostics", DIAGNOSTICS_VERBS, argv)
