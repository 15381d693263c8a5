"""asyncio glue only: the listener, per-connection byte pumping, timers."""
