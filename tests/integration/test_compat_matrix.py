"""The compatibility matrix inside the suite: every compat_matrix scenario runs on rabbitish
(`python -m rabbitish serve`) and on a real RabbitMQ node, both started here and restarted in
place once for the restart scenarios. Each scenario is one test: it fails when the records
differ and the difference is not listed in compat_matrix/expected_differences.toml."""

from __future__ import annotations

import pytest

from compat_matrix.matrix import MatrixRun, run_matrix, select
from compat_matrix.registry import FEATURES
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
    if not comparison.reference_ok:
        pytest.fail(f"{key} fails on RabbitMQ: {comparison.reference.outcome}", pytrace=False)
    if comparison.status == "unexpected":
        doc = comparison.scenario.doc
        pytest.fail(f"{key} differs from RabbitMQ: {doc}\n{comparison.diff}", pytrace=False)


def test_expected_differences_name_existing_scenarios(matrix: MatrixRun):
    assert matrix.stale == []
