#!/usr/bin/env python3
"""A stand-in for Apple's verifyReceipt written outside the product, for `bench apple --apple-url`.

It answers every POST after a fixed latency, as Apple does, with status 0 and the receipt's
transactions as paid. It understands only the simulator's receipts (base64 of a JSON object with
`bundle_id`, `environment` and `transactions`), which is what `bench apple` enqueues. HTTP/1.1
keep-alive on loopback, standard library only (asyncio's event loop), one process.

    scripts/fake-apple.py --port 18190 --latency 3
    receipt-worker bench apple --apple-url http://127.0.0.1:18190 --in-flight 10000

With `--timeline N` it prints `answered COUNT SECONDS` on stdout each time another N answers have
been written, SECONDS counted from the first connection it accepted: how fast the fake itself
serves a wave (scripts/fake-apple-ceiling.sh drives it with wrk, a client that costs next to nothing).
"""
import argparse
import asyncio
import binascii
import collections
import json
import socket
import time


COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))


def answer(body: bytes) -> bytes:
    try:
        request = json.loads(body.decode())
        receipt = json.loads(binascii.a2b_base64(request["receipt-data"]).decode())
    except (ValueError, KeyError, TypeError):
        return b'{"status":21002}'
    entries = []
    for t in receipt.get("transactions", []):
        entry = {
            "quantity": str(t.get("quantity") or 1),
            "product_id": t["product_id"],
            "transaction_id": t["transaction_id"],
            "original_transaction_id": t.get("original_transaction_id") or t["transaction_id"],
        }
        if t.get("purchase_date_ms") is not None:
            entry["purchase_date_ms"] = str(t["purchase_date_ms"])
        entries.append(entry)
    environment = "Sandbox" if receipt.get("environment") == "Sandbox" else "Production"
    return COMPACT_JSON.encode({"status": 0, "environment": environment,
                                "receipt": {"bundle_id": receipt.get("bundle_id"), "in_app": entries}}).encode()


class Timeline:
    """Counts answers written; every `step` of them, prints how long since the first connection."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.answered = 0
        self.first_connection = None

    def connected(self) -> None:
        if self.first_connection is None:
            self.first_connection = time.monotonic()

    def answer_written(self) -> None:
        self.answered += 1
        if self.step and self.answered % self.step == 0:
            print(f"answered {self.answered} {time.monotonic() - self.first_connection:.2f}", flush=True)


class Answers:
    """Requests waiting out the latency, oldest first. With one fixed latency the oldest is always
    due first, so a queue and a single timer do what a timer per request would, without 10,000
    timers kept in order in a heap."""

    def __init__(self, loop: asyncio.AbstractEventLoop, latency: float) -> None:
        self.loop = loop
        self.latency = latency
        self.waiting = collections.deque()
        self.timer = None

    def add(self, connection: "Connection", body: bytes) -> None:
        due = self.loop.time() + self.latency
        self.waiting.append((due, connection, body))
        if self.timer is None:
            self.timer = self.loop.call_at(due, self.release)

    def release(self) -> None:
        self.timer = None
        now = self.loop.time()
        waiting = self.waiting
        while waiting and waiting[0][0] <= now:
            _, connection, body = waiting.popleft()
            connection.respond(body)
        if waiting:
            self.timer = self.loop.call_at(waiting[0][0], self.release)


class Connection:
    """One keep-alive connection: each request read is answered `latency` seconds later.

    Plain non-blocking sockets on asyncio's event loop (a reader callback per socket, one timer
    for all answers due), not streams or transports: the fake shares the two cores with the
    worker and PostgreSQL, and a wave of 10,000 requests arrives at once, so what it spends per
    connection and per request decides how late its answers are.
    """

    MAX_HEAD = 65536

    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop, answers: Answers,
                 timeline: Timeline) -> None:
        self.sock = sock
        self.loop = loop
        self.answers = answers
        self.timeline = timeline
        self.buffer = bytearray()
        self.unsent = bytearray()
        self.closed = False
        loop.add_reader(sock.fileno(), self.readable)

    def readable(self) -> None:
        try:
            data = self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.close()
            return
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > self.MAX_HEAD:
                    self.close()
                return
            length = 0
            for line in bytes(self.buffer[:end]).split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    try:
                        length = int(value.strip())
                    except ValueError:
                        length = -1
                    if length < 0:
                        self.close()
                        return
            start = end + 4
            if len(self.buffer) < start + length:
                return
            body = bytes(self.buffer[start:start + length])
            del self.buffer[:start + length]
            self.answers.add(self, body)

    def respond(self, body: bytes) -> None:
        if self.closed:
            return
        payload = answer(body)
        self.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                  + str(len(payload)).encode() + b"\r\n\r\n" + payload)
        self.timeline.answer_written()

    def send(self, message: bytes) -> None:
        if self.unsent:  # the socket was full: keep the answers' order
            self.unsent += message
            return
        try:
            sent = self.sock.send(message)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self.close()
            return
        if sent < len(message):
            self.unsent += message[sent:]
            self.loop.add_writer(self.sock.fileno(), self.writable)

    def writable(self) -> None:
        try:
            sent = self.sock.send(self.unsent)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.close()
            return
        del self.unsent[:sent]
        if not self.unsent:
            self.loop.remove_writer(self.sock.fileno())

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.loop.remove_reader(self.sock.fileno())
            self.loop.remove_writer(self.sock.fileno())
            self.sock.close()


def accept_all(listener: socket.socket, loop: asyncio.AbstractEventLoop, answers: Answers, timeline: Timeline) -> None:
    while True:
        try:
            sock, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            # Out of file descriptors, say: the connection waits in the backlog. Listening again at
            # once would spin on it; a second later a descriptor may have been freed.
            loop.remove_reader(listener.fileno())
            loop.call_later(1.0, loop.add_reader, listener.fileno(), accept_all, listener, loop, answers, timeline)
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        timeline.connected()
        Connection(sock, loop, answers, timeline)


async def main() -> None:
    parser = argparse.ArgumentParser(description="A fake verifyReceipt for bench apple --apple-url.")
    parser.add_argument("--port", type=int, default=18190)
    parser.add_argument("--latency", type=float, default=3.0, help="seconds before each answer (default 3)")
    parser.add_argument("--timeline", type=int, default=0, metavar="N",
                        help="print the time since the first connection after every N answers written (default: off)")
    args = parser.parse_args()
    timeline = Timeline(args.timeline)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(16384)
    listener.setblocking(False)
    loop = asyncio.get_running_loop()
    loop.add_reader(listener.fileno(), accept_all, listener, loop, Answers(loop, args.latency), timeline)
    print(f"fake-apple listening on 127.0.0.1:{args.port}, latency {args.latency}s", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
