"""Verbs about the node rather than its contents: rabbitmqctl's await_startup and status, and
rabbitmq-diagnostics' ping, check_running and check_port_connectivity. "Running" means what a
client needs: the management API answers and the AMQP listener completes a protocol header."""

from __future__ import annotations

import socket
import time
from typing import Any

from rabbitish.cli.client import ApiFailure, amqp_answers
from rabbitish.cli.ctl.context import EX_UNAVAILABLE, Context, CtlError, NodeDown, refused
from rabbitish.cli.ctl.terms import json_line

BOLD, PLAIN = "\x1b[1m", "\x1b[0m"  # rabbitmqctl's section headings are bold even in a pipe


def _overview(ctx: Context) -> dict[str, Any]:
    overview: dict[str, Any] = ctx.checked("GET", "/api/overview")
    return overview


def _listeners(overview: dict[str, Any]) -> list[dict[str, Any]]:
    return list(overview.get("listeners") or [])


def _connects(host: str, port: int, timeout: float = 2.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _amqp_ready(overview: dict[str, Any]) -> bool:
    amqp = [item for item in _listeners(overview) if item.get("protocol") == "amqp"]
    return all(amqp_answers(_host(item), int(item["port"])) for item in amqp)


def _host(listener: dict[str, Any]) -> str:
    address = str(listener.get("ip_address") or "127.0.0.1")
    return {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(address, address)


# ---------------------------------------------------------------------- rabbitmqctl
def await_startup(ctx: Context) -> None:
    """Wait (up to --timeout seconds, 300 by default) until the node serves clients. Unlike the
    real verb it also waits for a node whose API does not answer yet, so `rabbitish serve &`
    followed by `rabbitmqctl await_startup` needs no retry loop."""
    deadline = time.monotonic() + ctx.timeout(300.0)
    while True:
        try:
            if _amqp_ready(ctx.get("/api/overview")):
                return
        except NodeDown:
            if time.monotonic() >= deadline:
                raise
        except ApiFailure as failure:
            raise refused(failure.reason) from None
        if time.monotonic() >= deadline:
            raise CtlError(
                EX_UNAVAILABLE,
                f"Error:\nRabbitMQ on node {ctx.node} is not running or has not fully booted yet",
            )
        time.sleep(0.1)


def status(ctx: Context) -> None:
    """rabbitmqctl's status layout with the figures rabbitish has (no Erlang runtime, memory
    breakdown or file descriptors: those sections are left out)."""
    printer = ctx.printer
    printer.info(f"Status of node {ctx.node} ...")
    overview = _overview(ctx)
    totals = overview.get("object_totals") or {}
    vhosts = ctx.get("/api/vhosts")
    try:
        ctx.get("/api/health/checks/alarms")
        alarms: list[str] = []
    except ApiFailure as failure:  # 503 while an alarm is in effect
        alarms = [str(failure.reason)]
    listeners = [
        {
            "interface": item.get("ip_address", ""),
            "node": item.get("node", ctx.node),
            "port": item.get("port"),
            "protocol": item.get("protocol"),
            "purpose": _purpose(str(item.get("protocol"))),
        }
        for item in _listeners(overview)
    ]
    document = {
        "alarms": alarms,
        "listeners": listeners,
        "product_name": overview.get("product_name", ""),
        "product_version": overview.get("product_version", ""),
        "rabbitmq_version": overview.get("rabbitmq_version", ""),
        "totals": {
            "virtual_host_count": len(vhosts),
            "connection_count": totals.get("connections", 0),
            "queue_count": totals.get("queues", 0),
        },
    }
    if printer.formatter == "json":
        printer.result(json_line(document))
        return
    lines = [
        f"{BOLD}Runtime{PLAIN}",
        "",
        f"RabbitMQ version: {document['rabbitmq_version']}",
        f"Node name: {overview.get('node', ctx.node)}",
        "",
        f"{BOLD}Alarms{PLAIN}",
        "",
        *(alarms or ["(none)"]),
        "",
        f"{BOLD}Totals{PLAIN}",
        "",
        f"Connection count: {document['totals']['connection_count']}",
        f"Queue count: {document['totals']['queue_count']}",
        f"Virtual host count: {document['totals']['virtual_host_count']}",
        "",
        f"{BOLD}Listeners{PLAIN}",
        "",
        *(
            f"Interface: {item['interface']}, port: {item['port']}, protocol: "
            f"{item['protocol']}, purpose: {item['purpose']}"
            for item in listeners
        ),
    ]
    printer.result("\n".join(lines))


def _purpose(protocol: str) -> str:
    return {
        "amqp": "AMQP 0-9-1 and AMQP 1.0",
        "amqp/ssl": "AMQP 0-9-1 and AMQP 1.0 over TLS",
        "http": "HTTP API",
        "https": "HTTP API over TLS (HTTPS)",
        "http/prometheus": "Prometheus exporter API over HTTP",
    }.get(protocol, protocol)


# ---------------------------------------------------------------------- rabbitmq-diagnostics
def ping(ctx: Context) -> None:
    timeout = ctx.timeout(60.0)
    ctx.printer.info(
        f"Will ping {ctx.node}. This only checks if the OS process is running and registered "
        f"with epmd. Timeout: {int(timeout * 1000)} ms.",
        at_once=True,
    )
    try:
        ctx.client(timeout).get("/api/overview")
    except Exception:  # any failure to reach or log in is a failed ping
        raise CtlError(
            EX_UNAVAILABLE,
            f"Error:\nFailed to connect and authenticate to {ctx.node} in {int(timeout * 1000)} ms",
        ) from None
    ctx.printer.message("Ping succeeded")


def check_running(ctx: Context) -> None:
    ctx.printer.info(f"Checking if RabbitMQ is running on node {ctx.node} ...", at_once=True)
    if not _amqp_ready(_overview(ctx)):
        raise CtlError(
            EX_UNAVAILABLE,
            f"Error:\nRabbitMQ on node {ctx.node} is not running or has not fully booted yet "
            "(check with is_booting)",
        )
    ctx.printer.message(f"RabbitMQ on node {ctx.node} is fully booted and running")


def check_port_connectivity(ctx: Context) -> None:
    ctx.printer.info(f"Testing TCP connections to all active listeners on node {ctx.node} ...")
    listeners = _listeners(_overview(ctx))
    failed = [item for item in listeners if not _connects(_host(item), int(item["port"]))]
    if failed:
        lines = "\n".join(
            f"Interface: {item.get('ip_address')}, port: {item['port']}, protocol: "
            f"{item.get('protocol')}, purpose: {_purpose(str(item.get('protocol')))}"
            for item in failed
        )
        raise CtlError(
            EX_UNAVAILABLE,
            f"Error:\nConnection to ports of the following listeners on node {ctx.node} "
            f"failed: \n{lines}",
        )
    if ctx.printer.formatter == "json":
        shown = [
            {
                "interface": item.get("ip_address", ""),
                "node": item.get("node", ctx.node),
                "port": item["port"],
                "protocol": item.get("protocol"),
                "purpose": _purpose(str(item.get("protocol"))),
            }
            for item in listeners
        ]
        ctx.printer.result(json_line({"listeners": shown, "node": ctx.node, "result": "ok"}))
        return
    ports = ", ".join(str(p) for p in sorted(int(item["port"]) for item in listeners))
    ctx.printer.result(f"Successfully connected to ports {ports} on node {ctx.node}.")
