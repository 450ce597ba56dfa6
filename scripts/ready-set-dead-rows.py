#!/usr/bin/env python3
"""What the dead rows a claim leaves in the ready set cost the claims after it.

On one connection it enqueues JOBS jobs and claims them BATCH at a time with the worker's claim
(`QueueStore.claimSQL`, read from Sources/Queue/QueueStore.swift, in a transaction of reused plans
as the worker runs it), and prints the server process's CPU per claim for every 200 claims: once
with no vacuum (each claim walks every dead index entry the claims before it left), and once with
`VACUUM iap.job_ready` every VACUUM_EVERY claims, its cost counted in. Measurement only: it empties
the queue's tables of the database given. Needs psycopg and a server on this machine (it reads /proc).

    scripts/ready-set-dead-rows.py postgresql://postgres@127.0.0.1:55440/perf --jobs 60000 --batch 50
"""
import argparse
import os

import psycopg

from queue_source import claim_sql

parser = argparse.ArgumentParser()
parser.add_argument("url")
parser.add_argument("--jobs", type=int, default=60000)
parser.add_argument("--batch", type=int, default=50)
parser.add_argument("--vacuum-every", type=int, default=200, help="claims between vacuums in the second pass")
arguments = parser.parse_args()
CLAIM = claim_sql({1: "%(limit)s", 2: "%(worker)s", 3: "%(lease)s", 4: "%(cached)s"})


def server_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def fill(count):
    with psycopg.connect(arguments.url, autocommit=True) as c:
        c.execute("TRUNCATE iap.job_queue, iap.job_requests, iap.job_ready, iap.job_parked, iap.job_flagged, iap.job_leases")
        c.execute("""SELECT count(*) FROM iap.enqueue_jobs(array_fill('receipt'::text, ARRAY[%(n)s]),
                         ARRAY(SELECT 'u' || g FROM generate_series(1, %(n)s) g), ARRAY(SELECT 'o' || g FROM generate_series(1, %(n)s) g),
                         array_fill(NULL::text, ARRAY[%(n)s]), array_fill('cGF5bG9hZA=='::text, ARRAY[%(n)s]))""", {"n": count})
        c.execute("VACUUM ANALYZE iap.job_queue, iap.job_requests, iap.job_ready")


def drain(vacuum_every):
    fill(arguments.jobs)
    with psycopg.connect(arguments.url, autocommit=True, prepare_threshold=0) as c:
        pid = c.execute("SELECT pg_backend_pid()").fetchone()[0]
        claims, before = 0, server_seconds(pid)
        while True:
            with c.pipeline():
                c.execute("BEGIN")
                c.execute("SET LOCAL plan_cache_mode = force_generic_plan")
                c.execute("SET LOCAL enable_seqscan = off")
                rows = c.execute(CLAIM, {"limit": arguments.batch, "worker": "w", "lease": 60.0, "cached": []})
                c.execute("COMMIT")
            if not rows.fetchall():
                break
            claims += 1
            if vacuum_every and claims % vacuum_every == 0:
                c.execute("VACUUM iap.job_ready")
            if claims % 200 == 0:
                now = server_seconds(pid)
                print(f"  claims {claims - 200}-{claims}: {(now - before) * 1e6 / 200:.0f} us of server CPU per claim", flush=True)
                before = now


print(f"no vacuum ({arguments.jobs} jobs, claims of {arguments.batch}):")
drain(0)
print(f"VACUUM iap.job_ready every {arguments.vacuum_every} claims, counted in:")
drain(arguments.vacuum_every)
