"""The fuzz targets as Hypothesis tests with a given number of examples: the suite's short pass
and `make fuzz`'s long one build their tests here. Each generated input counts once."""

from __future__ import annotations

import random
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fuzz import strategies as gen
from tests.fuzz import targets
from tests.support.amqp10_values import VALUES


@dataclass
class Tally:
    """Inputs run and the slowest one (a hang would show here, or never return)."""

    inputs: int = 0
    slowest: float = 0.0
    seconds: float = 0.0
    broker: targets.Broker = field(default_factory=targets.Broker)
    since_broker: int = 0

    mutants: int = 0  # inputs derived from each generated one (the long run)

    def run(self, check: Callable[[], None]) -> None:
        start = time.perf_counter()
        check()
        took = time.perf_counter() - start
        self.inputs += 1
        self.seconds += took
        self.slowest = max(self.slowest, took)

    def run_mutants(self, data: bytes, check: Callable[[bytes], None]) -> None:
        """Run `check` on `mutants` variants of a generated input (a byte changed, inserted
        or dropped, a run duplicated, the end cut, a length field rewritten), chosen by a
        generator seeded from the input."""
        rng = random.Random(zlib.crc32(data))
        for _ in range(self.mutants):
            variant = mutate(data, rng)
            self.run(lambda variant=variant: check(variant))

    def shared_broker(self) -> targets.Broker:
        """One broker for many inputs (a fresh one now and then keeps its queues small)."""
        self.since_broker += 1
        if self.since_broker > 2000:
            self.broker, self.since_broker = targets.Broker(), 0
        return self.broker


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One random change to `data` (a few, now and then)."""
    out = bytearray(data)
    for _ in range(1 if rng.random() < 0.8 else rng.randint(2, 6)):
        op = rng.randrange(6)
        at = rng.randrange(len(out) + 1)
        if op == 0 and out:
            out[min(at, len(out) - 1)] = rng.randrange(256)
        elif op == 1:
            out[at:at] = bytes([rng.randrange(256)])
        elif op == 2 and out:
            del out[at : at + rng.randint(1, 8)]
        elif op == 3 and out:
            out[at:at] = out[at : at + rng.randint(1, 16)]
        elif op == 4:
            del out[at:]
        else:
            out[at : at + 4] = rng.randrange(1 << 32).to_bytes(4, "big")
    return bytes(out)


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
            tally.run_mutants(data, lambda d: targets.frame_reader(d, cuts, frame_max))

    elif name == "connection":

        @given(gen.frames, gen.cuts)
        def test(data: bytes, cuts: list[int]) -> None:
            tally.run(lambda: targets.connection_input(tally.shared_broker(), data, cuts))
            tally.run_mutants(
                data, lambda d: targets.connection_input(tally.shared_broker(), d, cuts)
            )

    elif name == "content":

        @given(gen.content_header_payload(), st.binary(max_size=60), gen.cuts)
        def test(header: bytes, body: bytes, cuts: list[int]) -> None:
            tally.run(lambda: targets.content(tally.shared_broker(), header, body, cuts))
            tally.run_mutants(
                header, lambda h: targets.content(tally.shared_broker(), h, body, cuts)
            )

    elif name == "field_table":

        @given(gen.field_table())
        def test(table: bytes) -> None:
            tally.run(lambda: targets.field_table(table))
            tally.run_mutants(table, targets.field_table)

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
            data = value if kind == "bytes" else targets.encode(value)
            tally.run_mutants(data, targets.codec_bytes)

    elif name == "amqp10_connection":

        @given(gen.amqp10_frames(), gen.cuts)
        def test(data: bytes, cuts: list[int]) -> None:
            tally.run(lambda: targets.amqp10_connection(tally.shared_broker(), data, cuts))
            tally.run_mutants(
                data, lambda d: targets.amqp10_connection(tally.shared_broker(), d, cuts)
            )

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
