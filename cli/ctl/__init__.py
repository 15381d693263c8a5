"""`rabbitish ctl` and `rabbitish diagnostics`: rabbitmqctl's and rabbitmq-diagnostics' verbs,
options, output and exit codes over the management HTTP API, for scripts written for RabbitMQ."""
