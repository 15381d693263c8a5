"""`make screenshots`: the web UI's main pages, as docs/ui.md shows them, taken in a headless
Chromium against a broker with some traffic (queues with messages and consumers, a topic
exchange with bindings, steady publishes, gets and acks for the rate charts, a transactional
channel with staged work, a half transaction, an AMQP 1.0 connection with links when
qpid-proton is installed) and some administration (a user, a vhost, permissions, a policy and an
operator policy). `python -m tests.browser.screenshots [DIR]` (default docs/images)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pika

from rabbitish.testing import running_broker
from tests.support import browser
from tests.support.management import Api

WIDTH = 1200
PAGES = (  # file, hash ({shop}, {amqp10}: connection names), most height shown, CSS to wait for
    ("ui-overview.png", "#/", 800, "#total-queues"),
    ("ui-queues.png", "#/queues", 420, "#queues"),
    ("ui-queue.png", "#/queues/%2F/orders", 1300, "#q-messages"),
    ("ui-exchanges.png", "#/exchanges", 480, "#exchanges"),
    ("ui-exchange.png", "#/exchanges/%2F/events", 520, "#exchange-source-table"),
    ("ui-connections.png", "#/connections", 640, "#channels"),
    ("ui-connection.png", "#/connections/{shop}", 520, "#connection-channels"),
    ("ui-connection-amqp10.png", "#/connections/{amqp10}", 640, "#connection-parts .session-box"),
    ("ui-transactions.png", "#/transactions", 480, "#transactions"),
    ("ui-users.png", "#/users", 340, "#users"),
    ("ui-user.png", "#/users/ops-alice", 560, "#permissions tbody td"),
    ("ui-vhosts.png", "#/vhosts", 340, "#vhosts"),
    ("ui-permissions.png", "#/permissions", 300, "#permissions"),
    ("ui-policies.png", "#/policies", 760, "#operator-policies"),
)
SLOW = {"ui-overview.png": 6, "ui-queue.png": 6}  # seconds of refreshes for the rate charts


def named(url: str, name: str) -> pika.URLParameters:
    params = pika.URLParameters(url)
    params.client_properties = {"connection_name": name}
    return params


def traffic(url: str, stop: threading.Event) -> list[Any]:
    """The state the pictures show; returns the connections to keep open."""
    setup = pika.BlockingConnection(pika.URLParameters(url))
    ch = setup.channel()
    ch.exchange_declare("events", "topic", durable=True)
    ch.queue_declare("orders", durable=True, arguments={"x-dead-letter-exchange": "events"})
    ch.queue_declare("invoices", durable=True, arguments={"x-max-length": 10000})
    ch.queue_declare("emails", durable=True)
    ch.queue_declare("audit", durable=True)
    ch.queue_bind("audit", "events", "#")
    ch.queue_bind("orders", "events", "order.*")
    ch.queue_bind("invoices", "events", "invoice.created")
    for i in range(12):
        ch.basic_publish("events", "order.placed", f'{{"order": {i}, "item": "book"}}'.encode())
    for i in range(5):
        ch.basic_publish("", "emails", f"welcome mail {i}".encode())

    worker = pika.BlockingConnection(named(url, "invoice-worker"))
    wch = worker.channel()
    wch.basic_qos(prefetch_count=10)
    wch.basic_consume("invoices", lambda *a: None, auto_ack=False)

    shop = pika.BlockingConnection(named(url, "shop-frontend"))
    tx = shop.channel()
    tx.tx_select()
    tx.basic_publish("events", "order.placed", b'{"order": 100}')
    tx.basic_publish("events", "invoice.created", b'{"invoice": 7}')
    confirm = shop.channel()
    confirm.confirm_delivery()
    half = pika.BasicProperties(headers={"x-half-txn": "order-4711", "x-check-queue": "emails"})
    confirm.basic_publish("", "orders", b'{"order": 4711}', properties=half)

    def publish_steadily() -> None:
        """Invoices and orders flow in; an order handler takes and acks orders as they come."""
        feed = pika.BlockingConnection(named(url, "invoice-feed"))
        fch = feed.channel()
        n = 0
        while not stop.is_set():
            fch.basic_publish("events", "invoice.created", f'{{"invoice": {n}}}'.encode())
            fch.basic_publish("events", "order.placed", f'{{"order": {1000 + n}}}'.encode())
            method, _, _ = fch.basic_get("orders")
            if method is not None:
                fch.basic_ack(method.delivery_tag)
            n += 1
            feed.process_data_events(time_limit=0.2)
        feed.close()

    feeder = threading.Thread(target=publish_steadily, daemon=True)
    feeder.start()
    return [feeder, setup, worker, shop]


def administration(api: Api) -> None:
    """A user with some permissions, a second vhost, a policy and an operator policy."""
    api.ok("PUT", "/api/users/ops-alice", {"password": "s3cret", "tags": "monitoring"})
    api.ok("PUT", "/api/vhosts/staging", {"description": "pre-release tests", "tags": "qa"})
    everything = {"configure": ".*", "write": ".*", "read": ".*"}
    api.ok("PUT", "/api/permissions/staging/guest", everything)
    api.ok("PUT", "/api/permissions/staging/ops-alice", everything)
    api.ok(
        "PUT",
        "/api/permissions/%2F/ops-alice",
        {"configure": "^ops\\.", "write": ".*", "read": ".*"},
    )
    limit = {"max-length": 50000, "overflow": "reject-publish"}
    policy = {"pattern": "^orders$", "apply-to": "queues", "priority": 1, "definition": limit}
    api.ok("PUT", "/api/policies/%2F/orders-limit", policy)
    cap = {"pattern": ".*", "apply-to": "queues", "definition": {"max-length-bytes": 100000000}}
    api.ok("PUT", "/api/operator-policies/%2F/byte-cap", cap)


def amqp10_client(url: str) -> Any:
    """A 1.0 connection with a sender and a receiver, or None without qpid-proton."""
    try:
        from proton.utils import BlockingConnection
    except ImportError:
        return None
    from tests.support.amqp10 import proton_url

    conn = BlockingConnection(proton_url(url), timeout=10)
    conn.create_sender("/queues/emails", name="mailer-out")
    conn.create_receiver("/queues/invoices", name="invoice-archiver", credit=5)
    return conn


def connection_names(api: Api) -> dict[str, str]:
    """{shop}: the shop-frontend connection, {amqp10}: the 1.0 one, path-encoded."""
    names = {}
    for conn in api.ok("GET", "/api/connections"):
        if conn["client_properties"].get("connection_name") == "shop-frontend":
            names["shop"] = quote(conn["name"], safe="")
        if conn["protocol"] == "AMQP 1-0":
            names["amqp10"] = quote(conn["name"], safe="")
    return names


def viewport(driver: Any, height: int) -> None:
    """The page area exactly WIDTH x height (the window's own frame left aside)."""
    metrics = {"width": WIDTH, "height": height, "deviceScaleFactor": 1, "mobile": False}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)


def main(argv: list[str]) -> int:
    reason = browser.unavailable()
    if reason is not None:
        print(f"no screenshots: {reason}", file=sys.stderr)
        return 1
    out = Path(argv[0] if argv else "docs/images")
    stop = threading.Event()
    with running_broker(management=True) as broker:
        keep = traffic(broker.url, stop)
        base = f"http://127.0.0.1:{broker.management_port}"
        api = Api(broker.url, base, "rabbitish")
        administration(api)
        amqp10 = amqp10_client(broker.url)
        driver = browser.start_browser(WIDTH, 800)
        try:
            names = connection_names(api)
            browser.log_in(driver, base)
            driver.execute_script("document.getElementById('refresh').value = '2'")
            driver.execute_script(
                "document.getElementById('refresh').dispatchEvent(new Event('change'))"
            )
            for name, hash_, height, ready in PAGES:
                if "{amqp10}" in hash_ and "amqp10" not in names:
                    print(f"{name}: skipped (qpid-proton is not installed)", file=sys.stderr)
                    continue
                viewport(driver, height)
                driver.execute_script("window.location.hash = arguments[0]", hash_.format(**names))
                browser.wait_text(driver, ready, lambda _text: True)
                if name == "ui-queue.png":
                    driver.find_element("id", "get-button").click()
                    browser.wait_text(driver, "#get-results .payload", bool)
                time.sleep(SLOW.get(name, 2.5))  # a few refreshes: rates and charts
                drawn = driver.execute_script("return document.documentElement.scrollHeight")
                viewport(driver, min(height, drawn))
                browser.screenshot(driver, out / name)
                print(out / name)
        finally:
            driver.quit()
            stop.set()
            feeder, *connections = keep
            feeder.join()
            for conn in connections:
                conn.close()
            if amqp10 is not None:
                amqp10.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
