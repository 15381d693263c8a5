"""AMQP 0-9-1, sans-IO: bytes in, engine calls and bytes out. No asyncio here."""
