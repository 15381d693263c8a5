"""rabbitmqctl's verbs for users, vhosts, permissions, policies, queues, definitions,
connections and tracing, and the list_* verbs of listings.py: each prints the real tool's
banner, makes its management API calls and words its errors (text and exit code) as the real
tool does."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rabbitish.cli.client import ApiFailure, segment
from rabbitish.cli.ctl.arguments import UsageError
from rabbitish.cli.ctl.context import (
    EX_DATAERR,
    EX_NOUSER,
    EX_SOFTWARE,
    EX_UNAVAILABLE,
    EX_USAGE,
    Context,
    CtlError,
    refused,
)
from rabbitish.cli.ctl.listings import LISTINGS, Listing

ADD_USER_HINT = (
    "Done. Don't forget to grant the user permissions to some virtual hosts! "
    "See 'rabbitmqctl help set_permissions' to learn more."
)
_PID = re.compile(r"<[^<>.]+(@[^<>]+)?\.\d+\.\d+\.\d+>\Z")


def _no_user(name: str, quoted: bool = True) -> CtlError:
    shown = f'"{name}"' if quoted else name
    return CtlError(EX_NOUSER, f"Error:\nUser {shown} does not exist")


@dataclass(frozen=True)
class Verb:
    """One verb: its function, how many positional arguments it takes, the options of its own
    it accepts, and its usage line."""

    run: Callable[[Context], None]
    arity: tuple[int, int | None]
    usage: str
    options: frozenset[str] = field(default_factory=frozenset)


# ---------------------------------------------------------------------- listings
# What a list verb says when the vhost or user it names does not exist (the others list nothing)
_MISSING: dict[str, Callable[[str], CtlError]] = {
    "list_permissions": lambda vhost: CtlError(
        EX_DATAERR, f"Virtual host '{vhost}' does not exist"
    ),
    "list_policies": lambda vhost: CtlError(EX_DATAERR, f"Virtual host '{vhost}' does not exist"),
    "list_user_permissions": lambda user: CtlError(
        EX_UNAVAILABLE, f'Error:\n{{:no_such_user, "{user}"}}'
    ),
}


def listing_verb(listing: Listing) -> Callable[[Context], None]:
    def run(ctx: Context) -> None:
        invocation = ctx.invocation
        if listing.verb == "list_user_permissions":
            key, columns = invocation.args[0], list(listing.defaults)
        else:
            key = invocation.vhost
            columns = list(invocation.args) if listing.columns and invocation.args else []
            columns = columns or list(listing.defaults)
        unknown = [c for c in columns if c not in listing.items]
        if unknown:
            raise UsageError(f"Info key(s) {','.join(unknown)} are not supported")
        if listing.timeout_banner:
            ctx.printer.info(f"Timeout: {ctx.timeout(60.0)} seconds ...")
        ctx.printer.info(listing.banner(key))
        missing = _MISSING.get(listing.verb)
        try:
            found = ctx.get(listing.path(key))
        except ApiFailure as failure:
            if failure.status != 404:
                raise refused(failure.reason) from None
            if missing is not None:
                raise missing(key) from None
            found = []
        # the API lists no policies for a vhost that does not exist either
        vhost_path = f"/api/vhosts/{segment(key)}"
        if not found and listing.verb == "list_policies" and not ctx.exists(vhost_path):
            raise _MISSING["list_policies"](key)
        if "offline" in invocation.flags:
            found = []  # every queue of a single node is online
        rows = [listing.row(obj, columns) for obj in listing.order(found)]
        ctx.printer.rows(columns, rows, listing.stream)

    return run


# ---------------------------------------------------------------------- users
def _user(ctx: Context, name: str) -> dict[str, Any]:
    user: dict[str, Any] = ctx.checked("GET", f"/api/users/{segment(name)}", missing=_no_user(name))
    return user


def _put_user(ctx: Context, name: str, document: dict[str, Any]) -> None:
    ctx.checked("PUT", f"/api/users/{segment(name)}", document)


def add_user(ctx: Context) -> None:
    name, password = ctx.invocation.args
    ctx.printer.info(f'Adding user "{name}" ...')
    if ctx.exists(f"/api/users/{segment(name)}"):
        raise CtlError(EX_SOFTWARE, f'Error:\nUser "{name}" already exists')
    _put_user(ctx, name, {"password": password, "tags": ""})
    ctx.printer.info(ADD_USER_HINT)


def delete_user(ctx: Context) -> None:
    (name,) = ctx.invocation.args
    ctx.printer.info(f'Deleting user "{name}" ...')
    ctx.checked("DELETE", f"/api/users/{segment(name)}", missing=_no_user(name))


def change_password(ctx: Context) -> None:
    name, password = ctx.invocation.args
    ctx.printer.info(f'Changing password for user "{name}" ...')
    user = _user(ctx, name)
    _put_user(ctx, name, {"password": password, "tags": ",".join(user.get("tags") or [])})


def set_user_tags(ctx: Context) -> None:
    name, *tags = ctx.invocation.args
    ctx.printer.info(f'Setting tags for user "{name}" to [{", ".join(tags)}] ...')
    user = _user(ctx, name)
    document = {
        "password_hash": user.get("password_hash", ""),
        "hashing_algorithm": user.get("hashing_algorithm", "rabbit_password_hashing_sha256"),
        "tags": ",".join(tags),
    }
    _put_user(ctx, name, document)


# ---------------------------------------------------------------------- vhosts
def add_vhost(ctx: Context) -> None:
    (name,) = ctx.invocation.args
    ctx.printer.info(f'Adding vhost "{name}" ...')
    path = f"/api/vhosts/{segment(name)}"
    if ctx.exists(path):
        return  # as rabbitmqctl: adding an existing vhost changes nothing and succeeds
    values = ctx.invocation.values
    document = {"description": values.get("description", ""), "tags": values.get("tags", "")}
    if "default_queue_type" in values:
        document["default_queue_type"] = values["default_queue_type"]
    try:
        ctx.call("PUT", path, document)
        # RabbitMQ's HTTP API grants the creating user full permissions on a new vhost;
        # rabbitmqctl's add_vhost grants none: take back what the PUT granted
        for permission in ctx.get(f"{path}/permissions"):
            user = segment(permission["user"])
            ctx.call("DELETE", f"/api/permissions/{segment(name)}/{user}")
    except ApiFailure as failure:
        raise refused(failure.reason) from None


def delete_vhost(ctx: Context) -> None:
    (name,) = ctx.invocation.args
    ctx.printer.info(f'Deleting vhost "{name}" ...')
    missing = CtlError(EX_DATAERR, f"Virtual host '{name}' does not exist")
    ctx.checked("DELETE", f"/api/vhosts/{segment(name)}", missing=missing)


def _user_and_vhost(ctx: Context, user: str, vhost: str) -> None:
    """RabbitMQ checks the user, then the vhost (rabbit_vhost:with_user_and_vhost)."""
    if not ctx.exists(f"/api/users/{segment(user)}"):
        raise _no_user(user, quoted=False)
    if not ctx.exists(f"/api/vhosts/{segment(vhost)}"):
        raise CtlError(EX_UNAVAILABLE, f"Error:\nVirtual host {vhost} does not exist")


def set_permissions(ctx: Context) -> None:
    user, configure, write, read = ctx.invocation.args
    vhost = ctx.invocation.vhost
    ctx.printer.info(f'Setting permissions for user "{user}" in vhost "{vhost}" ...')
    _user_and_vhost(ctx, user, vhost)
    body = {"configure": configure, "write": write, "read": read}
    ctx.checked("PUT", f"/api/permissions/{segment(vhost)}/{segment(user)}", body)


def clear_permissions(ctx: Context) -> None:
    (user,) = ctx.invocation.args
    vhost = ctx.invocation.vhost
    ctx.printer.info(f'Clearing permissions for user "{user}" in vhost "{vhost}" ...')
    _user_and_vhost(ctx, user, vhost)
    try:
        ctx.call("DELETE", f"/api/permissions/{segment(vhost)}/{segment(user)}")
    except ApiFailure as failure:
        if failure.status != 404:  # none set: nothing to clear, as in RabbitMQ
            raise refused(failure.reason) from None


# ---------------------------------------------------------------------- policies
def set_policy(ctx: Context) -> None:
    name, pattern, definition = ctx.invocation.args
    values = ctx.invocation.values
    vhost, priority = ctx.invocation.vhost, values.get("priority", "0")
    ctx.printer.info(
        f'Setting policy "{name}" for pattern "{pattern}" to "{definition}" with priority '
        f'"{priority}" for vhost "{vhost}" ...'
    )
    try:
        parsed = json.loads(definition)
    except ValueError:
        raise CtlError(EX_UNAVAILABLE, "Error:\nJSON decoding error. Reason: badarg") from None
    try:
        number = int(priority)
    except ValueError:
        raise CtlError(EX_UNAVAILABLE, f"Error:\n{priority} is not a number") from None
    body = {
        "pattern": pattern,
        "definition": parsed,
        "priority": number,
        "apply-to": values.get("apply_to", "all"),
    }
    ctx.checked("PUT", f"/api/policies/{segment(vhost)}/{segment(name)}", body)


def clear_policy(ctx: Context) -> None:
    (name,) = ctx.invocation.args
    vhost = ctx.invocation.vhost
    ctx.printer.info(f'Clearing policy "{name}" on vhost "{vhost}" ...')
    missing = CtlError(EX_UNAVAILABLE, "Error:\nParameter does not exist")
    ctx.checked("DELETE", f"/api/policies/{segment(vhost)}/{segment(name)}", missing=missing)


# ---------------------------------------------------------------------- queues
def _queue_path(ctx: Context, name: str) -> str:
    return f"/api/queues/{segment(ctx.invocation.vhost)}/{segment(name)}"


def purge_queue(ctx: Context) -> None:
    (name,) = ctx.invocation.args
    ctx.printer.info(f"Purging queue '{name}' in vhost '{ctx.invocation.vhost}' ...")
    missing = CtlError(EX_UNAVAILABLE, "Error:\nnot_found")
    ctx.checked("DELETE", _queue_path(ctx, name) + "/contents", missing=missing)


def delete_queue(ctx: Context) -> None:
    (name,) = ctx.invocation.args
    flags = ctx.invocation.flags
    conditions = [c for c, on in (("empty", "if_empty"), ("unused", "if_unused")) if on in flags]
    when = " and".join(f" if queue is {c}" for c in conditions)
    ctx.printer.info(f"Deleting queue '{name}' on vhost '{ctx.invocation.vhost}'{when} ...")
    path = _queue_path(ctx, name)
    try:
        ready = int(ctx.get(path).get("messages_ready", 0))
        query = "&".join(f"if-{c}=true" for c in conditions)
        ctx.call("DELETE", path + (f"?{query}" if query else ""))
    except ApiFailure as failure:
        if failure.status == 404:
            raise CtlError(EX_USAGE, "Error:\nQueue not found") from None
        reason = str(failure.reason)
        if "in use" in reason:
            raise CtlError(EX_USAGE, "Error:\nQueue is in use") from None
        if "not empty" in reason:
            raise CtlError(EX_USAGE, "Error:\nQueue is not empty") from None
        raise refused(failure.reason) from None
    ctx.printer.result(f"Queue was successfully deleted with {ready} ready messages")


# ---------------------------------------------------------------------- definitions
def export_definitions(ctx: Context) -> None:
    (target,) = ctx.invocation.args
    if target != "-" and not Path(target).resolve().parent.is_dir():
        directory = str(Path(target).parent)
        raise UsageError(f"Bad argument: Directory {directory} does not exist", EX_DATAERR)
    if target != "-":
        ctx.printer.info(f'Exporting definitions in JSON to a file at "{target}" ...')
    definitions = ctx.checked("GET", "/api/definitions")
    text = json.dumps(definitions, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if target == "-":
        sys.stdout.write(text)
    else:
        Path(target).write_text(text)


def import_definitions(ctx: Context) -> None:
    (source,) = ctx.invocation.args
    if source == "-":
        ctx.printer.info("Importing definitions in JSON from standard input ...")
        text = sys.stdin.read()
    else:
        path = Path(source)
        if not path.is_file():
            raise UsageError(f"Bad argument: File {source} does not exist", EX_DATAERR)
        ctx.printer.info(f'Importing definitions in JSON from a file at "{source}" ...')
        text = path.read_text()
    try:
        definitions = json.loads(text)
    except ValueError as err:
        raise CtlError(EX_DATAERR, f"Error:\nFailed to decode definitions: {err}") from None
    ctx.checked("POST", "/api/definitions", definitions)
    ctx.printer.info(
        "Successfully started definition import. "
        "This process is asynchronous and can take some time."
    )


# ---------------------------------------------------------------------- connections, tracing
def close_connection(ctx: Context) -> None:
    pid, explanation = ctx.invocation.args
    ctx.printer.info(f"Closing connection {pid}, reason: {explanation}...")
    if not _PID.match(pid):
        raise CtlError(EX_UNAVAILABLE, f'Error:\nError:\n{{:invalid_pid_syntax, "{pid}"}}')
    items = LISTINGS["list_connections"].items
    for connection in ctx.get("/api/connections"):
        if items["pid"](connection).text == pid:
            try:
                path = f"/api/connections/{segment(connection['name'])}"
                ctx.call("DELETE", path, headers={"X-Reason": explanation})
            except ApiFailure as failure:
                if failure.status != 404:  # closed meanwhile: as a pid that exited
                    raise refused(failure.reason) from None
            return


def _trace(ctx: Context, on: bool) -> None:
    vhost = ctx.invocation.vhost
    verb = "Starting" if on else "Stopping"
    ctx.printer.info(f'{verb} tracing for vhost "{vhost}" ...')
    # As rabbitmqctl: any vhost name, existing or not (tracing is kept by name), none created.
    try:
        ctx.call("PUT" if on else "DELETE", f"/api/tracing/{segment(vhost)}")
    except ApiFailure as failure:
        raise refused(failure.reason) from None
    ctx.printer.result(f"Trace {'enabled' if on else 'disabled'} for vhost {vhost}")


def trace_on(ctx: Context) -> None:
    _trace(ctx, True)


def trace_off(ctx: Context) -> None:
    _trace(ctx, False)


# ---------------------------------------------------------------------- the table
_HEAD = "rabbitmqctl [--node <node>] [--longnames] [--quiet]"
_LIST_USAGE = {
    "list_queues": "list_queues [--vhost <vhost>] [--online] [--offline] [--local] "
    "[--no-table-headers] [<column>, ...] [--timeout <timeout>]",
    "list_exchanges": "list_exchanges [--vhost <vhost>] [--no-table-headers] [<column> ...] "
    "[--timeout <timeout>]",
    "list_bindings": "list_bindings [--vhost <vhost>] [--no-table-headers] [<column> ...] "
    "[--timeout <timeout>]",
    "list_connections": "list_connections [--no-table-headers] [<column> ...] "
    "[--timeout <timeout>]",
    "list_channels": "list_channels [--no-table-headers] [<column> ...]",
    "list_consumers": "list_consumers [--vhost <vhost>] [--no-table-headers] [<column> ...] "
    "[--timeout <timeout>]",
    "list_vhosts": "list_vhosts [--no-table-headers] [<column> ...] [--timeout <timeout>]",
    "list_users": "list_users [--no-table-headers] [--timeout <timeout>]",
    "list_permissions": "list_permissions [--vhost <vhost>] [--no-table-headers] "
    "[--timeout <timeout>]",
    "list_user_permissions": "list_user_permissions [--no-table-headers] <username> "
    "[--timeout <timeout>]",
    "list_policies": "list_policies [--vhost <vhost>] [--no-table-headers] [--timeout <timeout>]",
}


def _listing_arity(listing: Listing) -> tuple[int, int | None]:
    if listing.verb == "list_user_permissions":
        return (1, 1)
    return (0, None) if listing.columns else (0, 0)


VERBS: dict[str, Verb] = {
    **{
        name: Verb(
            listing_verb(listing),
            _listing_arity(listing),
            f"{_HEAD} {_LIST_USAGE[name]}",
            frozenset({"online", "offline", "local"}) if name == "list_queues" else frozenset(),
        )
        for name, listing in LISTINGS.items()
    },
    "add_user": Verb(add_user, (2, 2), f"{_HEAD} add_user <username> <password>"),
    "delete_user": Verb(delete_user, (1, 1), f"{_HEAD} delete_user <username>"),
    "change_password": Verb(
        change_password, (2, 2), f"{_HEAD} change_password <username> <password>"
    ),
    "set_user_tags": Verb(
        set_user_tags, (1, None), f"{_HEAD} set_user_tags <username> <tag> [...]"
    ),
    "add_vhost": Verb(
        add_vhost,
        (1, 1),
        f"{_HEAD} add_vhost <vhost> [--description <description> --tags "
        '"<tag1>,<tag2>,<...>" --default-queue-type <quorum|classic|stream>]',
        frozenset({"description", "tags", "default_queue_type"}),
    ),
    "delete_vhost": Verb(delete_vhost, (1, 1), f"{_HEAD} delete_vhost <vhost>"),
    "set_permissions": Verb(
        set_permissions,
        (4, 4),
        f"{_HEAD} set_permissions [--vhost <vhost>] <username> <conf> <write> <read>",
    ),
    "clear_permissions": Verb(
        clear_permissions, (1, 1), f"{_HEAD} clear_permissions [--vhost <vhost>] <username>"
    ),
    "set_policy": Verb(
        set_policy,
        (3, 3),
        f"{_HEAD} set_policy [--vhost <vhost>] [--priority <priority>] [--apply-to <apply-to>] "
        "<name> <pattern> <definition>",
        frozenset({"priority", "apply_to"}),
    ),
    "clear_policy": Verb(clear_policy, (1, 1), f"{_HEAD} clear_policy [--vhost <vhost>] <name>"),
    "purge_queue": Verb(purge_queue, (1, 1), f"{_HEAD} purge_queue [--vhost <vhost>] <queue>"),
    "delete_queue": Verb(
        delete_queue,
        (1, 1),
        f"{_HEAD} delete_queue [--vhost <vhost>] <queue_name> [--if-empty|-e] [--if-unused|-u]",
        frozenset({"if_empty", "if_unused"}),
    ),
    "export_definitions": Verb(
        export_definitions,
        (1, 1),
        f'{_HEAD} export_definitions <file_path | "-"> [--format <json | erlang>] '
        "[--timeout <timeout>]",
        frozenset({"format"}),
    ),
    "import_definitions": Verb(
        import_definitions,
        (1, 1),
        f'{_HEAD} import_definitions <file_path | "-"> [--format <json | erlang>] '
        "[--skip-if-unchanged] [--timeout <timeout>]",
        frozenset({"format", "skip_if_unchanged"}),
    ),
    "close_connection": Verb(
        close_connection, (2, 2), f"{_HEAD} close_connection <connection pid> <explanation>"
    ),
    "trace_on": Verb(trace_on, (0, 0), f"{_HEAD} trace_on [--vhost <vhost>]"),
    "trace_off": Verb(trace_off, (0, 0), f"{_HEAD} trace_off [--vhost <vhost>]"),
}
