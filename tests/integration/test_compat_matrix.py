"""The compatibility matrix inside the suite: every compat_matrix scenario runs on rabbitish
(`python -m rabbitish serve`) and on a real RabbitMQ node, both started here and restarted in
place once for the restart scenarios. Each scenario is one test: it fails when the records
differ and the difference is not listed in compat_matrix/expected_differences.toml, and when
RabbitMQ, which runs every scenario twice, records it differently the second time (a scenario
that is not deterministic compares nothing)."""

from __future__ import annotations

import pytest

from compat_matrix.compare import compare
from compat_matrix.matrix import REFERENCE_PASSES, MatrixRun, run_matrix, select
from compat_matrix.registry import FEATURES
from compat_matrix.runner import Result
from tests.support.real_rabbitmq import rabbitmq_available

pytestmark = [
    pytest.mark.rabbitmq,
    pytest.mark.skipif(not rabbitmq_available(), reason="rabbitmq-server is not installed"),
    pytest.mark.timeout(300),
]

SCENARIOS = select()


@pytest.fixture(scope="module")
def matrix() -> MatrixRun:
    return run_matrix(SCENARIOS, progress=lambda _message: None)


def test_the_matrix_covers_every_feature_with_150_scenarios():
    assert len(SCENARIOS) >= 150
    covered = {feature for s in SCENARIOS for feature in s.features}
    assert covered == set(FEATURES)


@pytest.mark.parametrize("key", [s.key for s in SCENARIOS])
def test_scenario_behaves_as_on_rabbitmq(matrix: MatrixRun, key: str):
    (comparison,) = [c for c in matrix.comparisons if c.scenario.key == key]
    if comparison.instability is not None:
        unstable = comparison.instability
        pytest.fail(
            f"{key} is not deterministic: RabbitMQ recorded it differently in two runs, so "
            f"comparing rabbitish against either run proves nothing; make what the scenario "
            f"records independent of the order or timing RabbitMQ happens to pick.\n"
            f"first difference: {unstable.describe()}\n{unstable.diff}",
            pytrace=False,
        )
    if not comparison.reference_ok:
        pytest.fail(f"{key} fails on RabbitMQ: {comparison.reference.outcome}", pytrace=False)
    if comparison.status == "unexpected":
        doc = comparison.scenario.doc
        pytest.fail(f"{key} differs from RabbitMQ: {doc}\n{comparison.diff}", pytrace=False)


def test_the_reference_ran_every_scenario_twice(matrix: MatrixRun):
    assert matrix.reference_passes == REFERENCE_PASSES >= 2
    assert sum(name.startswith("RabbitMQ") for name in matrix.raw) == REFERENCE_PASSES


def test_expected_differences_name_existing_scenarios(matrix: MatrixRun):
    assert matrix.stale == []


def test_an_unstable_reference_record_fails_even_where_rabbitish_matches_one_run():
    scenario = SCENARIOS[0]

    def results(*events: list[object]) -> dict[str, Result]:
        return {scenario.key: Result(scenario.key, "ok", [list(e) for e in events])}

    first, second = results(["a", 1], ["b", 2]), results(["a", 1], ["b", 3])
    (comparison,) = compare([scenario], first, first, {}, again=[second])
    assert comparison.status == "unstable"
    assert comparison.instability is not None
    assert comparison.instability.first == ('["b", 2]', '["b", 3]')
    assert comparison.instability.ours_matches == (1,)
    (steady,) = compare([scenario], first, first, {}, again=[first])
    assert steady.status == "same" and steady.instability is None
