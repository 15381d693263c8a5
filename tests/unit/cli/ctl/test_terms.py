"""Values as rabbitmqctl's formatters print them (cases read off RabbitMQ 3.10.8's output)."""

from __future__ import annotations

from rabbitish.cli.ctl.terms import (
    Rendered,
    erlang_atom,
    erlang_float,
    erlang_string,
    info_item,
    json_item,
    term,
)


def test_a_queue_s_arguments_print_as_the_cli_s_erlang_terms():
    arguments = {
        "x-max-length": 10,
        "x-dead-letter-exchange": "dlx",
        "x-e": "",
        "x-l": [1, "a"],
        "x-t": {"n": "é"},
        "x-b": True,
        "x-u": "日本",
        "x-big": 2**40,
    }
    assert info_item(arguments) == (
        '[{"x-max-length",10},{"x-dead-letter-exchange","dlx"},{"x-e",[]},{"x-l",[1,"a"]},'
        '{"x-t",[{"n","é"}]},{"x-b",true},{"x-u",[26085,26412]},{"x-big",1099511627776}]'
    )
    assert info_item({}) == "[]"


def test_json_rows_carry_amqp_field_types():
    assert json_item({"x-max-length": 10, "x-big": 2**40, "ae": "x", "t": {"n": "v"}}) == [
        ["x-max-length", "signedint", 10],
        ["x-big", "long", 2**40],
        ["ae", "longstr", "x"],
        ["t", "table", [["n", "longstr", "v"]]],
    ]
    assert json_item(None) == ""
    assert json_item(Rendered("127.0.0.1", [127, 0, 0, 1])) == [127, 0, 0, 1]


def test_cells():
    assert info_item(["administrator", "monitoring"]) == "[administrator, monitoring]"
    assert info_item([]) == "[]"
    assert (info_item(True), info_item(None), info_item(7)) == ("true", "", "7")
    assert info_item("weird name\ttab") == "weird name\ttab"  # names print raw


def test_erlang_spellings():
    assert erlang_string('a"b\\c\n') == '"a\\"b\\\\c\\n"'
    assert erlang_string("\x01") == "[1]"
    assert erlang_atom("rabbitish@localhost") == "rabbitish@localhost"
    assert erlang_atom("rabbit-1@host") == "'rabbit-1@host'"
    assert [erlang_float(f) for f in (1.0, 0.5, 1e-05, 1.5e16)] == [
        "1.0",
        "0.5",
        "1.0e-5",
        "1.5e16",
    ]
    assert term(None) == "undefined"
