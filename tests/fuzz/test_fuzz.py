"""The short fuzz pass of the suite: a few hundred generated inputs per target (the long pass
is `make fuzz`). See tests/fuzz/targets.py for what each input must keep."""

from __future__ import annotations

import pytest

from tests.fuzz.run import TARGETS, Tally, build, configured

EXAMPLES = {
    "frame_reader": 250,
    "connection": 200,
    "content": 150,
    "field_table": 300,
    "amqp10_codec": 200,
    "amqp10_connection": 120,
}


@pytest.mark.parametrize("name", TARGETS)
def test_fuzz_target(name: str) -> None:
    tally = Tally()
    configured(build(name, tally), EXAMPLES[name])()
    assert tally.inputs >= EXAMPLES[name] // 2  # generation did not starve
