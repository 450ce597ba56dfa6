#!/usr/bin/env python3
"""A stand-in for Apple's verifyReceipt written outside the product, for `bench apple --apple-url`.

It answers every POST after a fixed latency, as Apple does, with status 0 and the receipt's
transactions as paid. It understands only the simulator's receipts (base64 of a JSON object with
`bundle_id`, `environment` and `transactions`), which is what `bench apple` enqueues. HTTP/1.1
keep-alive on loopback, standard library only (asyncio), one process.

    scripts/fake-apple.py --port 18190 --latency 3
    receipt-worker bench apple --apple-url http://127.0.0.1:18190 --in-flight 10000

With `--timeline N` it prints `answered COUNT SECONDS` on stdout each time another N answers have
been written, SECONDS counted from the first connection it accepted: how fast the fake itself
serves a wave (scripts/fake-apple-ceiling.sh drives it with wrk, a client that costs next to nothing).
"""
import argparse
import asyncio
import base64
import json
import time


def answer(body: bytes) -> bytes:
    try:
        request = json.loads(body)
        receipt = json.loads(base64.b64decode(request["receipt-data"]))
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
    return json.dumps({"status": 0, "environment": environment,
                       "receipt": {"bundle_id": receipt.get("bundle_id"), "in_app": entries}},
                      separators=(",", ":")).encode()


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


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float, timeline: Timeline) -> None:
    timeline.connected()
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            body = await reader.readexactly(length) if length else b""
            await asyncio.sleep(latency)
            payload = answer(body)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(payload)).encode() + b"\r\n\r\n" + payload)
            await writer.drain()
            timeline.answer_written()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description="A fake verifyReceipt for bench apple --apple-url.")
    parser.add_argument("--port", type=int, default=18190)
    parser.add_argument("--latency", type=float, default=3.0, help="seconds before each answer (default 3)")
    parser.add_argument("--timeline", type=int, default=0, metavar="N",
                        help="print the time since the first connection after every N answers written (default: off)")
    args = parser.parse_args()
    timeline = Timeline(args.timeline)
    server = await asyncio.start_server(lambda r, w: serve(r, w, args.latency, timeline), "127.0.0.1", args.port, backlog=16384)
    print(f"fake-apple listening on 127.0.0.1:{args.port}, latency {args.latency}s", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
