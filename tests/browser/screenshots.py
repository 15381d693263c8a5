"""`make screenshots`: the web UI's main pages, as docs/ui.md shows them, taken in a headless
Chromium against a broker with some traffic (queues with messages and consumers, a topic
exchange with bindings, a transactional channel with staged work, a half transaction).
`python -m tests.browser.screenshots [DIR]` (default docs/images)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pika

from rabbitish.testing import running_broker
from tests.support import browser

WIDTH = 1200
PAGES = (  # file, hash, most height shown, CSS of what must be drawn first
    ("ui-overview.png", "#/", 800, "#total-queues"),
    ("ui-queues.png", "#/queues", 420, "#queues"),
    ("ui-queue.png", "#/queues/%2F/orders", 1250, "#q-messages"),
    ("ui-exchanges.png", "#/exchanges", 480, "#exchanges"),
    ("ui-exchange.png", "#/exchanges/%2F/events", 520, "#exchange-source-table"),
    ("ui-connections.png", "#/connections", 640, "#channels"),
    ("ui-transactions.png", "#/transactions", 480, "#transactions"),
)


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
        feed = pika.BlockingConnection(named(url, "invoice-feed"))
        fch = feed.channel()
        n = 0
        while not stop.is_set():
            fch.basic_publish("events", "invoice.created", f'{{"invoice": {n}}}'.encode())
            n += 1
            feed.process_data_events(time_limit=0.2)
        feed.close()

    feeder = threading.Thread(target=publish_steadily, daemon=True)
    feeder.start()
    return [feeder, setup, worker, shop]


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
        driver = browser.start_browser(WIDTH, 800)
        try:
            browser.log_in(driver, base)
            driver.execute_script("document.getElementById('refresh').value = '2'")
            driver.execute_script(
                "document.getElementById('refresh').dispatchEvent(new Event('change'))"
            )
            for name, hash_, height, ready in PAGES:
                viewport(driver, height)
                driver.execute_script("window.location.hash = arguments[0]", hash_)
                browser.wait_text(driver, ready, lambda _text: True)
                if name == "ui-queue.png":
                    driver.find_element("id", "get-button").click()
                    browser.wait_text(driver, "#get-results .payload", bool)
                time.sleep(6 if name == "ui-overview.png" else 2.5)  # a few refreshes: rates
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
