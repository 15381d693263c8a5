"""`python -m benchmarks.amqp10_hot_path`: CPU per message of the AMQP 1.0 bridge alone, in
this process, with no socket and no event loop: the sans-IO `Connection10` on an engine node
(`:memory:`), fed the bytes a qpid-proton client sends in `python -m benchmarks.amqp10`.

Wall-clock rates on a shared machine swing from run to run; this process's CPU time for the same
bytes moves far less, and under `valgrind --tool=callgrind` or cProfile the counts repeat
exactly, so it shows what a change to the bridge did to the broker's own work per message:
(a) send: unsettled 1 KiB transfers to `/queue/NAME`, fed `--chunk` frames per read, each
accepted (the batched dispositions taken as the socket layer would); (b) receive: a receiver
with link credit 500 takes the queue's messages, accepting each delivery as proton does (one
disposition per read, the credit topped up by a flow).

    python -m benchmarks.amqp10_hot_path [--messages 20000] [--rounds 7] [--body 1024]
                                         [--chunk 50] [--only send|receive]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from proton import Message
from rabbitish.bridge.codec import AMQP_HEADER, UInt, encode_frame
from rabbitish.bridge.codec.definitions import (
    Accepted,
    Attach,
    Begin,
    Detach,
    Disposition,
    Flow,
    Open,
    Source,
    Target,
    Transfer,
)
from rabbitish.bridge.connection import Connection10

from rabbitish.config import Config
from rabbitish.engine.clock import ManualScheduler
from rabbitish.engine.node import Node
from rabbitish.protocol.codec import CODEC

QUEUE = "/queue/bench"
CREDIT = 500  # the receiver's link credit, as benchmarks/amqp10.py grants it
WINDOW = 2_147_483_647  # the client's session windows: never the limit here
SENDER, RECEIVER = 0, 1  # the client's link handles


def _session_frames() -> bytes:
    begin = Begin(
        next_outgoing_id=UInt(0), incoming_window=UInt(WINDOW), outgoing_window=UInt(WINDOW)
    )
    sender = Attach(
        name="sender",
        handle=UInt(SENDER),
        role=False,
        source=Source(),
        target=Target(address=QUEUE),
    )
    return encode_frame(0, begin) + encode_frame(0, sender)


class Bridge:
    """One opened 1.0 connection with one session and a sender link on `/queue/bench`."""

    def __init__(self) -> None:
        self.scheduler = ManualScheduler()
        self.node = Node(self.scheduler, codec=CODEC)
        self.conn = Connection10(self.node, Config())
        self.conn.start(AMQP_HEADER, encode_frame(0, Open(container_id="bench")))
        self.conn.receive(_session_frames())
        self.conn.take_parts()
        self.next_delivery_id = 0

    @property
    def queue_depth(self) -> int:
        vhost = self.node.vhost("/")
        assert vhost is not None
        return vhost.queues["bench"].message_count

    def transfers(self, body: bytes, count: int) -> bytes:
        """`count` unsettled transfers of a message as proton encodes it, delivery ids on from
        the last ones sent."""
        data = Message(body=body, durable=False, inferred=True).encode()
        frames = []
        for _ in range(count):
            delivery_id = self.next_delivery_id
            self.next_delivery_id += 1
            transfer = Transfer(
                handle=UInt(SENDER),
                delivery_id=UInt(delivery_id),
                delivery_tag=delivery_id.to_bytes(4, "big"),
                message_format=UInt(0),
            )
            frames.append(encode_frame(0, transfer, data))
        return b"".join(frames)


def send_us(bridge: Bridge, messages: int, body: bytes, chunk: int) -> float:
    """CPU per message of taking `messages` transfers, `chunk` frames per read."""
    reads = [bridge.transfers(body, chunk) for _ in range(messages // chunk)]
    conn = bridge.conn
    start = time.process_time()
    for data in reads:
        conn.receive(data)
        conn.take_parts()
    return (time.process_time() - start) / (len(reads) * chunk) * 1e6


def receive_us(bridge: Bridge, messages: int) -> float:
    """CPU per message of delivering `messages` from the queue to a receiver with credit 500,
    which accepts each read's deliveries with one disposition and tops its credit up."""
    conn = bridge.conn
    receiver = Attach(
        name="receiver", handle=UInt(RECEIVER), role=True, source=Source(address=QUEUE)
    )
    session = conn.sessions[0]
    first, received = session.next_delivery_id, 0  # one transfer frame per delivery
    conn.receive(encode_frame(0, receiver) + encode_frame(0, _link_flow(first, 0)))
    conn.take_parts()
    start = time.process_time()
    for _, callback in bridge.scheduler.pending:  # the first credit is answered from a timer
        callback()
    bridge.scheduler.pending.clear()
    while received < messages:
        conn.take_parts()
        last = session.next_delivery_id - 1
        if last < first:
            break
        received += last - first + 1
        accept = Disposition(
            role=True, first=UInt(first), last=UInt(last), settled=True, state=Accepted()
        )
        conn.receive(encode_frame(0, accept) + encode_frame(0, _link_flow(last + 1, received)))
        first = last + 1
    conn.take_parts()
    spent = time.process_time() - start
    conn.receive(encode_frame(0, Detach(handle=UInt(RECEIVER), closed=True)))
    conn.take_parts()
    if received != messages or bridge.queue_depth:
        raise RuntimeError(f"received {received} of {messages}, {bridge.queue_depth} left")
    return spent / received * 1e6


def _link_flow(next_incoming_id: int, delivery_count: int) -> Flow:
    return Flow(
        next_incoming_id=UInt(next_incoming_id),
        incoming_window=UInt(WINDOW),
        next_outgoing_id=UInt(0),
        outgoing_window=UInt(WINDOW),
        handle=UInt(RECEIVER),
        delivery_count=UInt(delivery_count),
        link_credit=UInt(CREDIT),
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.amqp10_hot_path", description=__doc__
    )
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7, help="the median is reported")
    parser.add_argument("--body", type=int, default=1024, help="body size in bytes")
    parser.add_argument("--chunk", type=int, default=50, help="transfer frames per read")
    parser.add_argument("--only", choices=("send", "receive"))
    args = parser.parse_args()
    body = b"x" * args.body
    gc.collect()
    gc.freeze()  # as `rabbitish serve` does once started
    gc.set_threshold(10_000)
    bridge = Bridge()
    sends, receives = [], []
    for _ in range(args.rounds):
        sends.append(send_us(bridge, args.messages, body, args.chunk))
        if args.only != "send":
            receives.append(receive_us(bridge, args.messages))
        else:
            bridge.node.vhost("/").queues["bench"].purge()  # type: ignore[union-attr]
    print("| path | CPU per message, median | min | max |\n|---|---|---|---|")
    rows = [("send (unsettled, accepted)", sends), ("receive (credit 500, accepted)", receives)]
    for name, values in rows:
        if values and (args.only is None or name.startswith(args.only)):
            print(
                f"| {name} | {statistics.median(values):.2f} us | {min(values):.2f} us "
                f"| {max(values):.2f} us |"
            )


if __name__ == "__main__":
    main()
