"""Durable store (SQLite); the only place with SQL. Not built yet."""
