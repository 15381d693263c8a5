"""The fuzz targets as Hypothesis tests with a given number of examples: the suite's short pass
and `make fuzz`'s long one build their tests here. Each generated input counts once."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.bridge.strategies import VALUES
from tests.fuzz import strategies as gen
from tests.fuzz import targets


@dataclass
class Tally:
    """Inputs run and the slowest one (a hang would show here, or never return)."""

    inputs: int = 0
    slowest: float = 0.0
    seconds: float = 0.0
    broker: targets.Broker = field(default_factory=targets.Broker)
    since_broker: int = 0

    def run(self, check: Callable[[], None]) -> None:
        start = time.perf_counter()
        check()
        took = time.perf_counter() - start
        self.inputs += 1
        self.seconds += took
        self.slowest = max(self.slowest, took)

    def shared_broker(self) -> targets.Broker:
        """One broker for many inputs (a fresh one now and then keeps its queues small)."""
        self.since_broker += 1
        if self.since_broker > 2000:
            self.broker, self.since_broker = targets.Broker(), 0
        return self.broker


def build(name: str, tally: Tally) -> Callable[[], None]:
    """The Hypothesis test for target `name`, counting into `tally`."""
    if name == "frame_reader":

        @given(
            st.one_of(gen.frames, st.binary(max_size=64), gen.frames.map(lambda f: f + f[:5])),
            gen.cuts,
            st.sampled_from([4096, 131072, 64]),
        )
        def test(data: bytes, cuts: list[int], frame_max: int) -> None:
            tally.run(lambda: targets.frame_reader(data, cuts, frame_max))

    elif name == "connection":

        @given(gen.frames, gen.cuts)
        def test(data: bytes, cuts: list[int]) -> None:
            tally.run(lambda: targets.connection_input(tally.shared_broker(), data, cuts))

    elif name == "content":

        @given(gen.content_header_payload(), st.binary(max_size=60), gen.cuts)
        def test(header: bytes, body: bytes, cuts: list[int]) -> None:
            tally.run(lambda: targets.content(tally.shared_broker(), header, body, cuts))

    elif name == "field_table":

        @given(gen.field_table())
        def test(table: bytes) -> None:
            tally.run(lambda: targets.field_table(table))

    elif name == "amqp10_codec":

        @given(
            st.one_of(
                VALUES.map(lambda v: ("value", v)),
                st.binary(max_size=64).map(lambda b: ("bytes", b)),
            )
        )
        def test(case: tuple) -> None:
            kind, value = case
            check = targets.codec_roundtrip if kind == "value" else targets.codec_bytes
            tally.run(lambda: check(value))

    elif name == "amqp10_connection":

        @given(gen.amqp10_frames(), gen.cuts)
        def test(data: bytes, cuts: list[int]) -> None:
            tally.run(lambda: targets.amqp10_connection(tally.shared_broker(), data, cuts))

    else:
        raise KeyError(name)
    return test


TARGETS = (
    "frame_reader",
    "connection",
    "content",
    "field_table",
    "amqp10_codec",
    "amqp10_connection",
)


def configured(test: Callable[[], None], examples: int, shrink: bool = True) -> Callable[[], None]:
    phases = (Phase.generate, Phase.shrink) if shrink else (Phase.generate,)
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=phases,
        suppress_health_check=list(HealthCheck),
    )(test)
