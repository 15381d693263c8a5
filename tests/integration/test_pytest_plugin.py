"""The pytest plugin, driven through pytest's own pytester: it is registered by the `pytest11`
entry point, its fixtures give a working broker (pika, aio-pika, aiormq in the inner tests),
`amqp_reset` removes what a test declared, nothing starts unless asked, and the README's plugin
examples pass exactly as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

README = Path(__file__).resolve().parents[2] / "README.md"
INI = """
[pytest]
asyncio_default_fixture_loop_scope = function
"""


# Inner runs skip hypothesis's plugin: it costs over a second per run and nothing here uses it.
FAST = ("-p", "no:hypothesispytest")


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(INI)
    return pytester


def test_plugin_is_registered_through_the_entry_point(inner):
    result = inner.runpytest("--fixtures", *FAST)
    for fixture in ("rabbitish_broker", "rabbitish_url", "rabbitish_management_url", "amqp_reset"):
        assert re.search(rf"^{fixture}\b", result.stdout.str(), re.MULTILINE), fixture
    config = inner.parseconfig()
    assert config.pluginmanager.hasplugin("rabbitish")


def test_fixtures_give_a_broker_for_all_three_clients(inner):
    inner.makepyfile(
        """
        import aio_pika
        import aiormq
        import pika
        import pytest


        def test_pika(rabbitish_url, rabbitish_broker):
            assert rabbitish_url == rabbitish_broker.url
            connection = pika.BlockingConnection(pika.URLParameters(rabbitish_url))
            channel = connection.channel()
            channel.queue_declare("plugin-pika", exclusive=True)
            channel.basic_publish("", "plugin-pika", b"one")
            assert channel.basic_get("plugin-pika", auto_ack=True)[2] == b"one"
            connection.close()


        @pytest.mark.asyncio
        async def test_aio_pika(rabbitish_url):
            connection = await aio_pika.connect(rabbitish_url)
            async with connection:
                channel = await connection.channel()
                queue = await channel.declare_queue(exclusive=True)
                await channel.default_exchange.publish(aio_pika.Message(b"two"), queue.name)
                assert (await queue.get(timeout=5)).body == b"two"


        @pytest.mark.asyncio
        async def test_aiormq_same_session_broker(rabbitish_url, rabbitish_broker):
            connection = await aiormq.connect(rabbitish_url)
            channel = await connection.channel()
            ok = await channel.queue_declare("plugin-aiormq", exclusive=True)
            assert ok.queue == "plugin-aiormq"
            await connection.close()
        """
    )
    result = inner.runpytest("-q", *FAST)
    result.assert_outcomes(passed=3)


def test_amqp_reset_removes_only_what_the_test_declared(inner):
    inner.makeconftest(
        """
        import pika
        import pytest


        @pytest.fixture(scope="session", autouse=True)
        def kept(rabbitish_url):
            connection = pika.BlockingConnection(pika.URLParameters(rabbitish_url))
            channel = connection.channel()
            channel.exchange_declare("kept-exchange", "direct")
            channel.queue_declare("kept-queue")
            connection.close()


        @pytest.fixture
        def channel(rabbitish_url):
            connection = pika.BlockingConnection(pika.URLParameters(rabbitish_url))
            yield connection.channel()
            if connection.is_open:
                connection.close()
        """
    )
    inner.makepyfile(
        """
        import json
        import urllib.request
        from urllib.parse import urlsplit

        import pika.exceptions
        import pytest


        def bindings(management_url):
            parts = urlsplit(management_url)
            request = urllib.request.Request(
                f"http://{parts.hostname}:{parts.port}/api/bindings/%2F/e/kept-exchange/q/kept-queue",
                headers={"Authorization": "Basic Z3Vlc3Q6Z3Vlc3Q="},
            )
            with urllib.request.urlopen(request) as response:
                return json.load(response)


        def test_declares_things(channel, amqp_reset, rabbitish_management_url):
            channel.exchange_declare("made-exchange", "fanout")
            channel.queue_declare("made-queue", durable=True)
            channel.queue_bind("made-queue", "made-exchange")
            channel.queue_bind("kept-queue", "kept-exchange", "made-key")
            channel.basic_publish("", "kept-queue", b"stays")
            assert len(bindings(rabbitish_management_url)) == 1


        def test_they_are_gone(channel, rabbitish_management_url):
            for declare in (
                lambda ch: ch.queue_declare("made-queue", passive=True),
                lambda ch: ch.exchange_declare("made-exchange", passive=True),
            ):
                with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
                    declare(channel)
                assert info.value.reply_code == 404
                channel = channel.connection.channel()
            assert channel.queue_declare("kept-queue", passive=True).method.message_count == 1
            channel.exchange_declare("kept-exchange", passive=True)
            assert bindings(rabbitish_management_url) == []
        """
    )
    result = inner.runpytest("-q", *FAST)
    result.assert_outcomes(passed=2)


def test_nothing_starts_unless_a_fixture_is_used(inner):
    inner.makeconftest(
        """
        import threading

        def brokers():
            return {t.ident for t in threading.enumerate() if t.name == "rabbitish-broker"}

        BEFORE = brokers()
        """
    )
    inner.makepyfile(
        """
        from conftest import BEFORE, brokers


        def test_no_broker_thread():
            assert brokers() == BEFORE
        """
    )
    inner.runpytest("-q", *FAST).assert_outcomes(passed=1)


def _readme_plugin_files() -> dict[str, str]:
    """The python blocks of the README's pytest section, keyed by their `# file.py` line."""
    text = README.read_text()
    section = text.split("## pytest plugin", 1)[1].split("\n## ", 1)[0]
    files = {}
    for block in re.findall(r"```python\n(.*?)```", section, re.DOTALL):
        first = block.split("\n", 1)[0]
        match = re.fullmatch(r"# (\w+)\.py", first.strip())
        assert match, f"README plugin example without a '# file.py' first line: {first!r}"
        files[match.group(1)] = block
    return files


def test_readme_examples_pass_as_written(inner):
    files = _readme_plugin_files()
    assert set(files) == {"conftest", "test_orders_pika", "test_orders_aio_pika"}
    for name, source in files.items():
        inner.makepyfile(**{name: source})
    result = inner.runpytest("-q", *FAST, "test_orders_pika.py", "test_orders_aio_pika.py")
    result.assert_outcomes(passed=2)
