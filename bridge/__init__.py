"""AMQP 1.0 front end (installed as rabbitish.bridge); not built yet."""
