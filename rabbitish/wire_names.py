"""The names rabbitish itself puts on the wire: the headers and exchange of half transactions,
the capability the broker announces for them, and the name RabbitMQ gives the default exchange.

The broker (engine/half.py, protocol/handshake.py) and its clients (rabbitish.transactional,
rabbitish.spark's executors) read them from here. This module imports nothing, so a client that
needs a header name does not load the broker's engine with it."""

# Half messages (engine/half.py): a publish whose headers carry HALF_HEADER = ID is held until a
# publish to TXN_EXCHANGE (routing key "commit" or "rollback", same header) decides ID.
HALF_HEADER = "x-half-txn"
TXN_EXCHANGE = "amq.rabbitish.txn"
# Where and after how long the broker asks about an undecided ID, and (on its check message)
# how many times it has asked.
CHECK_QUEUE_HEADER = "x-check-queue"
CHECK_IMMUNITY_HEADER = "x-check-immunity"
CHECK_COUNT_HEADER = "x-check-count"

# connection.start's capability key saying this broker has half transactions (clients use them
# only where it is announced).
HALF_TRANSACTIONS_CAPABILITY = "rabbitish.half_transactions"

# RabbitMQ's firehose (engine/tracing.py): every vhost has this exchange; while tracing is on it
# receives "publish.<exchange>" and "deliver.<queue>" copies of the vhost's messages, which name
# the node they were traced on.
TRACE_EXCHANGE = "amq.rabbitmq.trace"
NODE_NAME = "rabbitish@localhost"

# What the management API and access refusals call the default exchange (whose name is "").
DEFAULT_EXCHANGE_ALIAS = "amq.default"

# What rabbitish answers as, on both protocols: clients key features off the product and the
# version. 0-9-1's connection.start says RabbitMQ 3.13.7 (the 0-9-1 broker rabbitish follows;
# unchanged since the first release, so 0-9-1 clients see no difference); AMQP 1.0's open says
# RabbitMQ 4.2.0: 4.0.0 is the first version with the 1.0 management node and the /queues and
# /exchanges addresses, which RabbitMQ's 4.x 1.0 clients require; they offer direct reply-to over
# 1.0 (a volatile dynamic source) only from 4.2.0, which rabbitish has (docs/amqp10.md
# "RabbitMQ 4 clients").
PRODUCT = "RabbitMQ"
VERSION_091 = "3.13.7"
VERSION_AMQP10 = "4.2.0"
