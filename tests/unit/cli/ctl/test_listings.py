"""The list verbs' info items read off the management API's JSON."""

from __future__ import annotations

from rabbitish.cli.ctl.listings import BROKER_NODE, LISTINGS, connection_pid

from rabbitish.management.format import NODE


def test_the_node_name_is_the_one_the_api_reports():
    assert BROKER_NODE == NODE


def test_pids_are_stable_and_close_connection_can_match_them():
    name = "127.0.0.1:5000 -> 127.0.0.1:5672"
    assert connection_pid(name) == connection_pid(name)
    assert connection_pid(name).text.startswith(f"<{NODE}.1.")
    channel = {"connection_details": {"name": name}, "number": 3}
    pid = LISTINGS["list_channels"].items["connection"](channel)
    assert pid == connection_pid(name)


def test_items_as_rabbitmqctl_prints_them():
    bindings = LISTINGS["list_bindings"]
    binding = {
        "source": "ex",
        "destination": "q",
        "destination_type": "queue",
        "routing_key": "",
        "arguments": {"x-match": "all", "k": "v"},
    }
    assert bindings.row(binding, ["source_kind", "arguments"]) == [
        "exchange",
        {"k": "v", "x-match": "all"},  # sorted by key, as RabbitMQ stores them
    ]
    vhosts = LISTINGS["list_vhosts"]
    made = {"name": "v1", "description": "", "tags": []}
    tagged = {"name": "v2", "description": "", "tags": ["a", "b"]}
    default = {"name": "/", "description": "Default virtual host", "tags": []}
    assert [vhosts.row(v, ["tags"]) for v in (made, tagged, default)] == [[""], ["a,b"], [[]]]
    policy = {"definition": {"message-ttl": 1, "alternate-exchange": "ae"}}
    assert LISTINGS["list_policies"].items["definition"](policy) == (
        '{"alternate-exchange":"ae","message-ttl":1}'
    )


def test_bindings_in_rabbitmq_s_order():
    def binding(source: str, key: str, kind: str, destination: str) -> dict[str, object]:
        return {
            "source": source,
            "routing_key": key,
            "destination_type": kind,
            "destination": destination,
            "arguments": {},
        }

    listed = [
        binding("", "q2", "queue", "q2"),
        binding("ex1", "b.*", "exchange", "ex2"),
        binding("ex1", "a.#", "queue", "q1"),
        binding("", "q1", "queue", "q1"),
        binding("ex0", "z", "queue", "q1"),
    ]
    ordered = LISTINGS["list_bindings"].order(listed)
    assert [(b["source"], b["routing_key"]) for b in ordered] == [
        ("", "q2"),
        ("", "q1"),
        ("ex0", "z"),
        ("ex1", "a.#"),
        ("ex1", "b.*"),
    ]


def test_connections_and_channels_are_0_9_1_s():
    found = [{"name": "a", "protocol": "AMQP 0-9-1"}, {"name": "b", "protocol": "AMQP 1.0"}]
    for verb in ("list_connections", "list_channels"):
        assert [c["name"] for c in LISTINGS[verb].order(found)] == ["a"]
