"""RabbitMQ-compatible management HTTP API subset. Not built yet."""
