"""The first thing a user does: connect, declare, publish, get."""

import pika


def test_publish_and_get_round_trip(amqp_url, uid):
    conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        ch = conn.channel()
        ch.queue_declare(uid, auto_delete=True)
        ch.basic_publish("", uid, b"hello", pika.BasicProperties(content_type="text/plain"))
        method, props, body = ch.basic_get(uid, auto_ack=True)
        assert body == b"hello"
        assert props.content_type == "text/plain"
        assert method.message_count == 0
    finally:
        conn.close()
