"""`rabbitish serve` refuses settings it cannot run with before it starts."""

from __future__ import annotations

from rabbitish.cli.serve import limits_problem

from rabbitish.config import Config


def test_a_negative_transaction_timeout_is_refused():
    assert limits_problem(Config(transaction_timeout=-1)) == (
        "--transaction-timeout must not be negative"
    )
    assert limits_problem(Config(transaction_timeout=0.5)) is None
