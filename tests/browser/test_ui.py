"""The management web UI in a real headless Chromium: log in through the form, watch a queue's
depth follow AMQP publishes without reloading the page, peek a message, publish and purge from
the page, and see transactions and channels as clients leave them. One browser and one broker
for the module."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pika
import pytest

from rabbitish.testing import running_broker
from tests.support import browser
from tests.support.waiting import wait_until

pytestmark = pytest.mark.browser
GUEST = "Basic " + base64.b64encode(b"guest:guest").decode()

REASON = browser.unavailable()
if REASON is not None:
    pytest.skip(REASON, allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402


@pytest.fixture(scope="module")
def broker() -> Iterator[Any]:
    with running_broker(management=True) as broker:
        yield broker


@pytest.fixture(scope="module")
def base(broker) -> str:
    return f"http://127.0.0.1:{broker.management_port}"


@pytest.fixture(scope="module")
def driver(base) -> Iterator[Any]:
    driver = browser.start_browser()
    try:
        browser.log_in(driver, base)
        Select(driver.find_element(By.ID, "refresh")).select_by_value("2")
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def channel(broker) -> Iterator[Any]:
    conn = pika.BlockingConnection(pika.URLParameters(broker.url))
    try:
        yield conn.channel()
    finally:
        conn.close()


def test_queue_depth_follows_publishes_then_peek_and_purge(driver, base, channel, uid) -> None:
    channel.queue_declare(uid)
    browser.goto(driver, f"#/queues/%2F/{uid}", "#q-messages")
    browser.wait_text(driver, "#q-messages", lambda t: t == "0")
    driver.execute_script("window.stillTheSamePage = true")

    channel.basic_publish("", uid, b"hello from pika")
    browser.wait_text(driver, "#q-messages", lambda t: t == "1", "depth never showed 1")
    browser.wait_text(driver, "#q-ready", lambda t: t == "1")
    assert driver.execute_script("return window.stillTheSamePage") is True  # no reload

    Select(driver.find_element(By.ID, "get-ackmode")).select_by_value("ack_requeue_true")
    driver.find_element(By.ID, "get-button").click()
    assert browser.wait_text(driver, "#get-results .payload", bool) == "hello from pika"
    assert "Redelivered" in driver.find_element(By.ID, "get-results").text
    browser.wait_text(driver, "#q-messages", lambda t: t == "1")  # requeued

    driver.find_element(By.ID, "purge-button").click()
    browser.accept_confirm(driver)
    browser.wait_text(driver, "#queue-action-result", lambda t: t == "Queue purged.")
    browser.wait_text(driver, "#q-messages", lambda t: t == "0")
    assert channel.queue_declare(uid, passive=True).method.message_count == 0


def test_publish_from_the_queue_page_and_get_with_ack(driver, base, channel, uid) -> None:
    channel.queue_declare(uid)
    browser.goto(driver, f"#/queues/%2F/{uid}", "#queue-publish")
    driver.find_element(By.ID, "queue-payload").send_keys("typed in the page")
    driver.find_element(By.ID, "queue-headers").send_keys('{"origin": "ui"}')
    driver.find_element(By.ID, "queue-publish-button").click()
    browser.wait_text(driver, "#queue-publish-result", lambda t: t == "Message published.")
    browser.wait_text(driver, "#q-messages", lambda t: t == "1")

    Select(driver.find_element(By.ID, "get-ackmode")).select_by_value("ack_requeue_false")
    driver.find_element(By.ID, "get-button").click()
    assert browser.wait_text(driver, "#get-results .payload", bool) == "typed in the page"
    assert "origin" in driver.find_element(By.ID, "get-results").text
    browser.wait_text(driver, "#q-messages", lambda t: t == "0")  # acknowledged: gone


def test_queues_list_filters_sorts_and_draws_sparklines(driver, base, channel, uid) -> None:
    for name, count in ((f"{uid}-b", 2), (f"{uid}-a", 1), (f"{uid}-c", 3)):
        channel.queue_declare(name)
        for _ in range(count):
            channel.basic_publish("", name, b"x")
    browser.goto(driver, "#/queues", "#queues")
    box = driver.find_element(By.ID, "queue-filter")
    box.clear()
    box.send_keys(uid)

    def names(expected: list[str]) -> bool:
        found = [row[1] for row in browser.rows(driver, "#queues") if uid in row[1]]
        return found == expected

    ascending = [f"{uid}-a", f"{uid}-b", f"{uid}-c"]
    wait_until(lambda: names(ascending), timeout=browser.WAIT, interval=0.1)
    browser.click(driver, "#queues th[data-sort='messages']")  # by depth, ascending
    browser.click(driver, "#queues th[data-sort='messages']")  # descending
    descending = [f"{uid}-c", f"{uid}-b", f"{uid}-a"]
    wait_until(lambda: names(descending), timeout=browser.WAIT, interval=0.1)
    assert driver.find_elements(By.CSS_SELECTOR, "#queues svg.spark")


def test_channels_and_transactions_show_staged_work(driver, base, broker, uid) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(broker.url))
    try:
        ch = conn.channel()
        ch.queue_declare(uid)
        ch.tx_select()
        ch.basic_publish("", uid, b"staged")
        ch.basic_publish("", uid, b"staged too")
        browser.goto(driver, "#/connections", "#channels")
        # columns: channel, user, mode, prefetch, consumers, unacked, uncommitted msgs ...
        transactional = wait_until(
            lambda: [row for row in browser.rows(driver, "#channels") if row[2] == "T"],
            timeout=browser.WAIT,
            interval=0.1,
        )
        assert [row[6] for row in transactional] == ["2"]

        browser.goto(driver, "#/transactions", "#transactions")
        browser.wait_text(driver, "#transactions .staged-publishes", lambda t: t == "2")
        ch.tx_commit()  # the channel's next transaction opens empty
        browser.wait_text(driver, "#transactions .staged-publishes", lambda t: t == "0")
    finally:
        conn.close()


def test_exchange_page_lists_bindings_and_publishes(driver, base, channel, uid) -> None:
    channel.exchange_declare(f"{uid}-x", "direct")
    channel.queue_declare(uid)
    channel.queue_bind(uid, f"{uid}-x", "key-1")
    browser.goto(driver, f"#/exchanges/%2F/{uid}-x", "#exchange-source-table")
    browser.wait_text(driver, "#exchange-source-table", lambda t: "key-1" in t and uid in t)
    driver.find_element(By.ID, "exchange-routing-key").send_keys("key-1")
    driver.find_element(By.ID, "exchange-payload").send_keys("via the exchange")
    driver.find_element(By.ID, "exchange-publish-button").click()
    browser.wait_text(driver, "#exchange-publish-result", lambda t: t == "Message published.")
    assert channel.queue_declare(uid, passive=True).method.message_count == 1


def test_overview_counts_and_wrong_password(driver, base, channel, uid) -> None:
    channel.queue_declare(uid)
    browser.goto(driver, "#/", "#total-queues")
    browser.wait_text(driver, "#total-connections .value", lambda t: int(t) >= 1)
    browser.wait_text(driver, "#total-queues .value", lambda t: int(t) >= 1)

    driver.find_element(By.ID, "logout").click()
    wait_until(lambda: driver.find_element(By.ID, "login").is_displayed(), timeout=browser.WAIT)
    driver.find_element(By.ID, "password").send_keys("wrong")
    driver.find_element(By.ID, "login-button").click()
    browser.wait_text(driver, "#login-error", lambda t: t == "Login failed")
    browser.log_in(driver, base)
    Select(driver.find_element(By.ID, "refresh")).select_by_value("2")


def test_half_transaction_committed_from_the_page(driver, base, channel, uid) -> None:
    channel.queue_declare(uid)
    channel.confirm_delivery()
    held = pika.BasicProperties(headers={"x-half-txn": f"{uid}-txn"})
    channel.basic_publish("", uid, b"held until decided", properties=held)
    assert channel.queue_declare(uid, passive=True).method.message_count == 0
    browser.goto(driver, "#/transactions", "#half-transactions")
    browser.click(
        driver, f"#half-transactions button[data-decision='commit'][data-half='{uid}-txn']"
    )
    browser.accept_confirm(driver)
    browser.wait_text(driver, "#half-result", lambda t: t == "commit: 1 message(s).")
    assert channel.queue_declare(uid, passive=True).method.message_count == 1


def test_prepared_transaction_listed_with_its_acks_and_rolled_back(
    driver, base, channel, uid
) -> None:
    channel.queue_declare(uid)
    channel.basic_publish("", uid, b"acked, then prepared")
    tx = channel.connection.channel()
    tx.tx_select()
    tx.basic_ack(tx.basic_get(uid)[0].delivery_tag)
    prepare = pika.BasicProperties(headers={"x-half-txn": f"{uid}-xa"})
    tx.basic_publish("amq.rabbitish.txn", "prepare", b"", prepare)
    tx.tx_commit()
    browser.goto(driver, "#/transactions", "#half-transactions")
    found: list[list[str]] = []
    wait_until(
        lambda: (
            found.extend(
                r for r in browser.rows(driver, "#half-transactions") if r[0] == f"{uid}-xa"
            )
            or found
        ),
        timeout=browser.WAIT,
    )
    row = found[0]
    assert row[1:5] == ["prepared", "/", "0", "1"], row
    browser.click(
        driver, f"#half-transactions button[data-decision='rollback'][data-half='{uid}-xa']"
    )
    browser.accept_confirm(driver)
    browser.wait_text(driver, "#half-result", lambda t: t == "rollback: 0 message(s), 1 ack(s).")
    assert channel.queue_declare(uid, passive=True).method.message_count == 1


def test_add_then_delete_a_queue_from_the_pages(driver, base, uid) -> None:
    browser.goto(driver, "#/queues", "#add-queue")
    driver.find_element(By.ID, "new-queue-name").send_keys(uid)
    driver.find_element(By.ID, "new-queue-args").send_keys('{"x-max-length": 5}')
    browser.click(driver, "#add-queue button[type='submit']")
    browser.wait_text(driver, "#add-queue-result", lambda t: t == "Queue declared.")
    assert management(base, f"/api/queues/%2F/{uid}")["arguments"] == {"x-max-length": 5}

    browser.goto(driver, f"#/queues/%2F/{uid}", "#q-messages")
    browser.wait_text(driver, "#queue-details", lambda t: "x-max-length: 5" in t)
    browser.click(driver, "#delete-button")
    browser.accept_confirm(driver)
    wait_until(lambda: driver.execute_script("return location.hash") == "#/queues", browser.WAIT)
    with pytest.raises(urllib.error.HTTPError) as refused:
        management(base, f"/api/queues/%2F/{uid}")
    assert refused.value.code == 404


def management(base: str, path: str) -> Any:
    request = urllib.request.Request(base + path, headers={"Authorization": GUEST})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())
