"""AMQP 1.0 bridge tests."""
