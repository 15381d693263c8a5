"""What every front end (0-9-1 and AMQP 1.0) shares: the typed contract the rest of the broker reads, and the mechanics both protocols use."""
