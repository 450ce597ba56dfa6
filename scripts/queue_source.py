"""The worker's statements as the scripts beside it read them: from Sources/Queue/QueueStore.swift,
so that a measurement runs what the worker runs. Imported by queue-duty-costs.py and
ready-set-dead-rows.py."""
import os
import re

QUEUE_STORE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources", "Queue", "QueueStore.swift")


def claim_sql(placeholders):
    """`QueueStore.claimSQL` with each `$N` replaced by `placeholders[N]` (psycopg's `%(name)s`)."""
    source = open(QUEUE_STORE).read()
    found = re.search(r'static let claimSQL = """\n(.*?)\n        """', source, re.S)
    if found is None:
        raise SystemExit(f"cannot find QueueStore.claimSQL in {QUEUE_STORE}")
    return re.sub(r"\$(\d+)", lambda m: placeholders[int(m.group(1))], found.group(1))
