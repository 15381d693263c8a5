"""Scenarios written once and run side by side against rabbitish and a real RabbitMQ.

`python -m compat_matrix` (`make compat`) runs every scenario on both brokers (twice on RabbitMQ,
to catch scenarios whose reference record is not stable), compares the records and writes
docs/compat-matrix.md; see registry.py for the feature rows."""
