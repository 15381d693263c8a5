"""Protocol-neutral broker domain: vhosts, exchanges, queues, bindings, consumers, transactions.
No sockets, no SQL, no wire codecs."""
