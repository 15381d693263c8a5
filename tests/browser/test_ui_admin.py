"""The web UI's admin and detail pages in a real headless Chromium: users, permissions, vhosts
and policies added, edited and deleted through the page and checked through the API; the vhost
selector scoping the lists; message-rate charts following live traffic; a connection's page with
its 0-9-1 channels or AMQP 1.0 sessions and links; and broker names that look like markup shown as
text on every page. One browser and one broker for the module."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pika
import pika.exceptions
import pytest

from rabbitish.testing import running_broker
from tests.support import browser
from tests.support.management import Api
from tests.support.waiting import wait_until

pytestmark = pytest.mark.browser

REASON = browser.unavailable()
if REASON is not None:
    pytest.skip(REASON, allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

# Names a careless page would run as markup: an image whose error handler alerts, a script.
HOSTILE = ("<img src=x onerror=alert(1)>", '"><script>window.__xss=1</script>')


def seg(text: str) -> str:
    return quote(text, safe="")


@pytest.fixture(scope="module")
def broker() -> Iterator[Any]:
    with running_broker(management=True) as broker:
        yield broker


@pytest.fixture(scope="module")
def api(broker) -> Api:
    return Api(broker.url, f"http://127.0.0.1:{broker.management_port}", "rabbitish")


@pytest.fixture(scope="module")
def driver(api) -> Iterator[Any]:
    driver = browser.start_browser()
    try:
        browser.log_in(driver, api.base)
        Select(driver.find_element(By.ID, "refresh")).select_by_value("2")
        yield driver
    finally:
        driver.quit()


def type_into(driver: Any, element_id: str, text: str) -> None:
    box = driver.find_element(By.ID, element_id)
    box.clear()
    box.send_keys(text)


def choose(driver: Any, element_id: str, value: str) -> None:
    Select(driver.find_element(By.ID, element_id)).select_by_value(value)


def choose_vhost(driver: Any, vhost: str) -> None:
    """Pick a vhost in the header's selector ("" for all), once the selector lists it."""
    wait_until(
        lambda: vhost in [o.get_attribute("value") for o in Select(selector(driver)).options],
        timeout=browser.WAIT,
        interval=0.1,
    )
    Select(selector(driver)).select_by_value(vhost)


def selector(driver: Any) -> Any:
    return driver.find_element(By.ID, "vhost")


def column(driver: Any, table: str, index: int) -> set[str]:
    return {row[index] for row in browser.rows(driver, table) if len(row) > index}


def status(api: Api, path: str) -> int:
    return api.call("GET", path).status


# ---------------------------------------------------------------------- users
def test_add_edit_and_delete_a_user(driver, api, uid) -> None:
    browser.goto(driver, "#/users", "#add-user")
    type_into(driver, "new-user-name", uid)
    type_into(driver, "new-user-password", "first-secret")
    type_into(driver, "new-user-tags", "monitoring")
    browser.click(driver, "#add-user button[type='submit']")
    browser.wait_text(driver, "#add-user-result", lambda t: t == "User added.")
    assert api.ok("GET", f"/api/users/{uid}")["tags"] == ["monitoring"]
    assert api.call("GET", "/api/whoami", auth=(uid, "first-secret")).status == 200
    browser.wait_text(driver, "#users", lambda t: uid in t)

    browser.click(driver, f"#users a[href='#/users/{uid}']")
    browser.wait_text(driver, "#user-name", lambda t: t == uid)
    wait_until(
        lambda: driver.find_element(By.ID, "edit-user-tags").get_attribute("value") == "monitoring",
        timeout=browser.WAIT,
    )
    type_into(driver, "edit-user-tags", "administrator, policymaker")
    type_into(driver, "edit-user-password", "second-secret")
    browser.click(driver, "#edit-user button[type='submit']")
    browser.wait_text(driver, "#edit-user-result", lambda t: t.startswith("User updated"))
    assert api.ok("GET", f"/api/users/{uid}")["tags"] == ["administrator", "policymaker"]
    assert api.call("GET", "/api/whoami", auth=(uid, "second-secret")).status == 200
    assert api.call("GET", "/api/whoami", auth=(uid, "first-secret")).status == 401

    browser.click(driver, "#delete-user")
    browser.accept_confirm(driver)
    wait_until(lambda: driver.execute_script("return location.hash") == "#/users", browser.WAIT)
    assert status(api, f"/api/users/{uid}") == 404


def test_a_monitoring_user_has_no_admin_tab_and_is_refused_there_but_stays_in(
    driver, api, uid
) -> None:
    api.ok("PUT", f"/api/users/{uid}", {"password": "pw", "tags": "monitoring"})
    try:
        driver.find_element(By.ID, "logout").click()
        browser.log_in(driver, api.base, uid, "pw")
        assert not driver.find_element(By.CSS_SELECTOR, "#nav a[data-page='admin']").is_displayed()
        browser.goto(driver, "#/users", "#users-table")
        browser.wait_text(driver, "#status", lambda t: t == "401 Not administrator user")
        assert driver.find_element(By.ID, "logout").is_displayed()
    finally:
        driver.find_element(By.ID, "logout").click()
        browser.log_in(driver, api.base)
        Select(driver.find_element(By.ID, "refresh")).select_by_value("2")
        api.ok("DELETE", f"/api/users/{uid}")


# ---------------------------------------------------------------------- permissions
def test_set_permissions_on_the_user_page_and_clear_them_on_the_permissions_page(
    driver, api, uid
) -> None:
    api.ok("PUT", f"/api/users/{uid}", {"password": "pw", "tags": ""})
    browser.goto(driver, f"#/users/{uid}", "#set-permission")
    choose(driver, "permission-vhost", "/")
    type_into(driver, "permission-configure-input", f"^{uid}")
    type_into(driver, "permission-write-input", ".*")
    type_into(driver, "permission-read-input", "^amq\\.")
    browser.click(driver, "#set-permission button[type='submit']")
    browser.wait_text(driver, "#permission-result", lambda t: t == "Permission set.")
    assert api.ok("GET", f"/api/permissions/%2F/{uid}") == {
        "user": uid,
        "vhost": "/",
        "configure": f"^{uid}",
        "write": ".*",
        "read": "^amq\\.",
    }
    browser.wait_text(driver, "#permissions", lambda t: f"^{uid}" in t)

    browser.goto(driver, "#/permissions", "#permissions")
    wait_until(
        lambda: [r for r in browser.rows(driver, "#permissions") if r[0] == uid],
        timeout=browser.WAIT,
    )
    browser.click(driver, f"#permissions button[data-clear-user='{uid}']")
    browser.accept_confirm(driver)
    browser.wait_text(driver, "#permission-result", lambda t: t == "Permission cleared.")
    assert status(api, f"/api/permissions/%2F/{uid}") == 404
    api.ok("DELETE", f"/api/users/{uid}")


# ---------------------------------------------------------------------- vhosts and the selector
def test_add_a_vhost_scope_the_lists_to_it_then_delete_it(driver, api, uid) -> None:
    browser.goto(driver, "#/vhosts", "#add-vhost")
    type_into(driver, "new-vhost-name", uid)
    type_into(driver, "new-vhost-description", "made in the page")
    browser.click(driver, "#add-vhost button[type='submit']")
    browser.wait_text(driver, "#add-vhost-result", lambda t: t == "Virtual host added.")
    assert api.ok("GET", f"/api/vhosts/{uid}")["description"] == "made in the page"
    everything = {"configure": ".*", "write": ".*", "read": ".*"}
    api.ok("PUT", f"/api/permissions/{uid}/guest", everything)
    api.ok("PUT", f"/api/queues/{uid}/{uid}-inside", {"durable": False})
    api.ok("PUT", f"/api/queues/%2F/{uid}-outside", {"durable": False})
    api.ok(
        "PUT", f"/api/policies/{uid}/{uid}-p", {"pattern": "^x", "definition": {"max-length": 1}}
    )
    inside = pika.BlockingConnection(pika.URLParameters(f"{api.amqp_url.rsplit('/', 1)[0]}/{uid}"))
    try:
        choose_vhost(driver, uid)
        browser.goto(driver, "#/queues", "#queues")
        expected = [[uid, f"{uid}-inside"]]
        wait_until(lambda: [r[:2] for r in browser.rows(driver, "#queues")] == expected, 15)
        browser.goto(driver, "#/exchanges", "#exchanges")
        wait_until(lambda: column(driver, "#exchanges", 0) == {uid}, browser.WAIT)
        assert "amq.topic" in column(driver, "#exchanges", 1)
        browser.goto(driver, "#/connections", "#connections")
        wait_until(lambda: column(driver, "#connections", 2) == {uid}, browser.WAIT)
        browser.goto(driver, "#/policies", "#policies")
        wait_until(lambda: column(driver, "#policies", 1) == {f"{uid}-p"}, browser.WAIT)

        choose_vhost(driver, "")
        browser.goto(driver, "#/queues", "#queues")
        browser.wait_text(
            driver, "#queues", lambda t: f"{uid}-inside" in t and f"{uid}-outside" in t
        )
    finally:
        inside.close()
        choose_vhost(driver, "")

    browser.goto(driver, "#/vhosts", "#vhosts")
    browser.click(driver, f"#vhosts button[data-delete-vhost='{uid}']")
    browser.accept_confirm(driver)
    browser.wait_text(driver, "#add-vhost-result", lambda t: t == "Virtual host deleted.")
    assert status(api, f"/api/vhosts/{uid}") == 404
    wait_until(
        lambda: uid not in [o.get_attribute("value") for o in Select(selector(driver)).options],
        timeout=browser.WAIT,
    )


# ---------------------------------------------------------------------- policies
def test_add_edit_and_delete_policies_and_operator_policies(driver, api, uid) -> None:
    browser.goto(driver, "#/policies", "#policy-form")

    def save(kind: str, name: str, pattern: str, apply_to: str, priority: str, definition: str):
        choose(driver, "policy-kind", kind)
        choose(driver, "policy-vhost", "/")
        type_into(driver, "policy-name", name)
        type_into(driver, "policy-pattern", pattern)
        choose(driver, "policy-apply-to", apply_to)
        type_into(driver, "policy-priority", priority)
        type_into(driver, "policy-definition", definition)
        driver.execute_script("document.getElementById('policy-result').textContent = ''")
        browser.click(driver, "#policy-save")
        browser.wait_text(driver, "#policy-result", lambda t: t == "Policy saved.")

    save("policies", uid, f"^{uid}", "queues", "3", '{"max-length": 5}')
    assert api.ok("GET", f"/api/policies/%2F/{uid}") == {
        "vhost": "/",
        "name": uid,
        "pattern": f"^{uid}",
        "apply-to": "queues",
        "definition": {"max-length": 5},
        "priority": 3,
    }
    save("operator-policies", f"{uid}-op", f"^{uid}", "all", "1", '{"max-length": 100}')
    assert api.ok("GET", f"/api/operator-policies/%2F/{uid}-op")["definition"] == {
        "max-length": 100
    }
    browser.wait_text(driver, "#operator-policies", lambda t: f"{uid}-op" in t)

    browser.click(driver, f"#policies button[data-edit][data-name='{uid}']")
    assert driver.find_element(By.ID, "policy-pattern").get_attribute("value") == f"^{uid}"
    assert driver.find_element(By.ID, "policy-apply-to").get_attribute("value") == "queues"
    type_into(driver, "policy-priority", "7")
    type_into(driver, "policy-definition", '{"max-length": 9, "overflow": "reject-publish"}')
    driver.execute_script("document.getElementById('policy-result').textContent = ''")
    browser.click(driver, "#policy-save")
    browser.wait_text(driver, "#policy-result", lambda t: t == "Policy saved.")
    edited = api.ok("GET", f"/api/policies/%2F/{uid}")
    assert (edited["priority"], edited["definition"]) == (
        7,
        {"max-length": 9, "overflow": "reject-publish"},
    )

    for kind, name in (("policies", uid), ("operator-policies", f"{uid}-op")):
        browser.click(driver, f"#{kind} button[data-remove][data-name='{name}']")
        browser.accept_confirm(driver)
        browser.wait_text(driver, "#policy-result", lambda t: t == "Policy deleted.")
        assert status(api, f"/api/{kind}/%2F/{name}") == 404


def test_a_bad_policy_shows_the_apis_reason(driver, uid) -> None:
    browser.goto(driver, "#/policies", "#policy-form")
    choose(driver, "policy-kind", "policies")
    type_into(driver, "policy-name", uid)
    type_into(driver, "policy-pattern", "(")
    type_into(driver, "policy-definition", '{"max-length": 5}')
    browser.click(driver, "#policy-save")
    browser.wait_text(driver, "#policy-result", lambda t: t.startswith("400"))


# ---------------------------------------------------------------------- exchanges
def test_add_an_exchange_then_delete_it_from_its_page(driver, api, uid) -> None:
    browser.goto(driver, "#/exchanges", "#add-exchange")
    type_into(driver, "new-exchange-name", uid)
    choose(driver, "new-exchange-type", "topic")
    browser.click(driver, "#add-exchange button[type='submit']")
    browser.wait_text(driver, "#add-exchange-result", lambda t: t == "Exchange declared.")
    declared = api.ok("GET", f"/api/exchanges/%2F/{uid}")
    assert (declared["type"], declared["durable"]) == ("topic", True)

    browser.click(driver, f"#exchanges a[href='#/exchanges/%2F/{uid}']")
    browser.wait_text(driver, "#exchange-name", lambda t: t == uid)
    browser.click(driver, "#delete-exchange")
    browser.accept_confirm(driver)
    wait_until(lambda: driver.execute_script("return location.hash") == "#/exchanges", 10)
    assert status(api, f"/api/exchanges/%2F/{uid}") == 404


# ---------------------------------------------------------------------- rate charts
def steady_traffic(url: str, queue: str, stop: threading.Event) -> None:
    """Publish, get and ack one message every 20 ms until told to stop."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        ch = conn.channel()
        while not stop.is_set():
            ch.basic_publish("", queue, b"tick")
            method, _, _ = ch.basic_get(queue)
            if method is not None:
                ch.basic_ack(method.delivery_tag)
            conn.process_data_events(time_limit=0.02)
    finally:
        conn.close()


def latest(driver: Any, chart: str, series: str) -> float:
    text = browser.text_of(driver, f"#{chart} .latest[data-series='{series}']") or ""
    return float(text.removesuffix("/s").replace(",", "") or 0)


def test_rate_charts_follow_traffic_on_the_queue_page_and_the_overview(driver, api, uid) -> None:
    api.ok("PUT", f"/api/queues/%2F/{uid}", {"durable": False})
    stop = threading.Event()
    worker = threading.Thread(target=steady_traffic, args=(api.amqp_url, uid, stop))
    worker.start()
    try:
        series = ("Publish", "Deliver / get", "Ack")
        browser.goto(driver, f"#/queues/%2F/{uid}", "#queue-rate-chart")
        wait_until(
            lambda: all(latest(driver, "queue-rate-chart", s) > 0 for s in series),
            timeout=browser.WAIT,
            interval=0.2,
        )
        wait_until(  # a line once two samples are in
            lambda: len(driver.find_elements(By.CSS_SELECTOR, "#queue-rate-chart polyline")) == 3,
            timeout=browser.WAIT,
        )
        browser.goto(driver, "#/", "#rates-chart")
        wait_until(
            lambda: all(latest(driver, "rates-chart", s) > 0 for s in series),
            timeout=browser.WAIT,
            interval=0.2,
        )
    finally:
        stop.set()
        worker.join()


# ---------------------------------------------------------------------- connection pages
def test_a_0_9_1_connections_page_lists_its_channels_and_closes_it(driver, api, uid) -> None:
    params = pika.URLParameters(api.amqp_url)
    params.client_properties = {"connection_name": uid}
    conn = pika.BlockingConnection(params)
    try:
        conn.channel()
        conn.channel().tx_select()
        name = wait_until(
            lambda: next(
                (
                    c["name"]
                    for c in api.ok("GET", "/api/connections")
                    if c["client_properties"].get("connection_name") == uid
                ),
                None,
            )
        )
        browser.goto(driver, "#/connections", "#connections")
        browser.click(driver, f"#connections a[href='#/connections/{seg(name)}']")
        browser.wait_text(driver, "#connection-name", lambda t: t == name)
        wait_until(lambda: len(browser.rows(driver, "#connection-channels")) == 2, browser.WAIT)
        assert [r[2] for r in browser.rows(driver, "#connection-channels")] == ["", "T"]
        browser.wait_text(driver, "#client-properties", lambda t: uid in t)

        browser.click(driver, "#close-connection")
        browser.accept_confirm(driver)
        wait_until(lambda: driver.execute_script("return location.hash") == "#/connections", 10)
        assert status(api, f"/api/connections/{seg(name)}") == 404
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker, match="management"):
            conn.process_data_events(time_limit=5)
    finally:
        if conn.is_open:
            conn.close()


def test_an_amqp_1_0_connections_page_lists_sessions_and_links(driver, api, uid) -> None:
    pytest.importorskip("proton")
    from proton.utils import BlockingConnection

    from tests.support.amqp10 import proton_url

    api.ok("PUT", f"/api/queues/%2F/{uid}", {"durable": False})
    conn = BlockingConnection(proton_url(api.amqp_url), timeout=10)
    try:
        conn.create_sender(f"/queues/{uid}", name=f"{uid}-out")
        conn.create_receiver(f"/queues/{uid}", name=f"{uid}-in")
        name = wait_until(
            lambda: next(
                (
                    c["name"]
                    for c in api.ok("GET", "/api/connections")
                    if c["protocol"] == "AMQP 1-0"
                ),
                None,
            )
        )
        browser.goto(driver, f"#/connections/{seg(name)}", "#connection-parts .session-box")
        browser.wait_text(driver, "#connection-parts-heading", lambda t: t == "Sessions and links")
        text = browser.wait_text(
            driver, "#connection-parts", lambda t: f"{uid}-out" in t and f"{uid}-in" in t
        )
        assert f"/queues/{uid}" in text
    finally:
        conn.close()


# ---------------------------------------------------------------------- names as text
def declare_hostile(api: Api, name: str, index: int) -> str:
    """Every kind of broker name the UI shows, called `name`; returns the connection's name."""
    vhost = seg(name)
    api.ok("PUT", f"/api/vhosts/{vhost}", {"description": name})
    api.ok(
        "PUT", f"/api/permissions/{vhost}/guest", {"configure": ".*", "write": ".*", "read": ".*"}
    )
    api.ok("PUT", f"/api/users/{vhost}", {"password": "pw", "tags": "management"})
    api.ok("PUT", f"/api/permissions/{vhost}/{vhost}", {"configure": ".*", "write": "", "read": ""})
    for where in ("%2F", vhost):
        api.ok("PUT", f"/api/queues/{where}/{vhost}", {"durable": False})
    api.ok("PUT", f"/api/exchanges/%2F/{vhost}", {"type": "direct"})
    api.ok("POST", f"/api/bindings/%2F/e/{vhost}/q/{vhost}", {"routing_key": name})
    never = {"pattern": f"^never-{index}$", "definition": {"max-length": 1}}
    api.ok("PUT", f"/api/policies/%2F/{vhost}", never)
    api.ok("PUT", f"/api/operator-policies/%2F/{vhost}", never)
    body = {
        "routing_key": name,
        "payload": name,
        "payload_encoding": "string",
        "properties": {"headers": {name: name}},
    }
    assert api.ok("POST", f"/api/exchanges/%2F/{vhost}/publish", body) == {"routed": True}
    return vhost


def test_names_that_look_like_markup_show_as_text_on_every_page(driver, api) -> None:
    connections = []
    try:
        for index, name in enumerate(HOSTILE):
            declare_hostile(api, name, index)
            params = pika.URLParameters(api.amqp_url)
            params.client_properties = {"connection_name": name}
            connections.append(pika.BlockingConnection(params))
        # alert() only counts: a dialog would block the page
        driver.execute_script("window.alert = () => { window.__alerted = true; }")
        conn_names = {
            c["client_properties"]["connection_name"]: c["name"]
            for c in api.ok("GET", "/api/connections")
            if c["client_properties"].get("connection_name") in HOSTILE
        }

        def shows(hash_: str, ready: str, names: tuple[str, ...] = HOSTILE) -> None:
            browser.goto(driver, hash_, ready)
            wait_until(
                lambda: all(n in page_text(driver) for n in names),
                timeout=browser.WAIT,
                interval=0.1,
                message=f"{hash_} never showed the names as text",
            )
            assert_nothing_ran(driver, hash_)

        shows("#/", "#overview-connections table")
        shows("#/queues", "#queues")
        shows("#/exchanges", "#exchanges")
        shows("#/connections", "#channels")
        shows("#/users", "#users")
        shows("#/vhosts", "#vhosts")
        shows("#/permissions", "#permissions")
        shows("#/policies", "#operator-policies")
        for name in HOSTILE:
            shows(f"#/queues/%2F/{seg(name)}", "#queue-bindings-table", (name,))
            assert browser.text_of(driver, "#queue-name") == name
            browser.click(driver, "#get-button")
            browser.wait_text(driver, "#get-results .payload", lambda t, n=name: t == n)
            headers = driver.execute_script(
                "return Array.from(document.querySelectorAll('#get-results .headers li'))"
                ".map(li => li.textContent)"
            )
            assert headers == [f"{name}: {name}"]
            assert_nothing_ran(driver, "get messages")
            shows(f"#/exchanges/%2F/{seg(name)}", "#exchange-source-table tbody td", (name,))
            assert browser.text_of(driver, "#exchange-name") == name
            shows(f"#/users/{seg(name)}", "#permissions tbody td", (name,))
            shows(f"#/connections/{seg(conn_names[name])}", "#connection-channels", (name,))
            choose_vhost(driver, name)
            shows("#/queues", "#queues", (name,))
            wait_until(
                lambda n=name: [r[:2] for r in browser.rows(driver, "#queues")] == [[n, n]],
                browser.WAIT,
            )
            options = [o.text for o in Select(selector(driver)).options]
            assert name in options
            choose_vhost(driver, "")
        assert_nothing_ran(driver, "the end")
    finally:
        choose_vhost(driver, "")
        for conn in connections:
            conn.close()
        for name in HOSTILE:
            for path in ("vhosts", "users", "exchanges/%2F", "queues/%2F"):
                api.call("DELETE", f"/api/{path}/{seg(name)}")
            for path in ("policies", "operator-policies"):
                api.call("DELETE", f"/api/{path}/%2F/{seg(name)}")


def page_text(driver: Any) -> str:
    return driver.execute_script("return document.body.textContent")


def assert_nothing_ran(driver: Any, where: str) -> None:
    ran = driver.execute_script(
        "return {xss: window.__xss, alerted: window.__alerted,"
        " images: document.querySelectorAll('img').length,"
        " scripts: document.querySelectorAll('body script').length}"
    )
    assert ran == {"xss": None, "alerted": None, "images": 0, "scripts": 0}, where
    assert browser.alert(driver) is None, where
