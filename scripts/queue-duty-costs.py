#!/usr/bin/env python3
"""What each duty of the queue costs PostgreSQL, one duty left out at a time.

`bench queue` compares the drain with a plain-SQL yardstick (docs/benchmarks.md). This script
says where the difference goes: on one connection, with no worker, it drains JOBS no-op jobs with
the product's claim and completion statements, then again with one duty removed per variant, and
prints the server process's CPU per job (and WAL per job) for each, the median of PASSES rounds.

The claim is `QueueStore.claimSQL`, read from Sources/Queue/QueueStore.swift. A batch of `done`
results is completed by `iap.complete_done_jobs` (migrations 0041 and 0042, its rows found by the
row versions the claim returned; "product"). The other statements
are copies of `completeWitnessedDoneSQL` (what a batch of `done` results with a lost lease runs;
"completion_statement", and the variants that leave a part of it out), `completeWitnessedSQL`
(with its side-row writes, for the variant that places jobs) and `dropLeasesSQL`: change them
there, change them here. Measurement only; it empties the queue's
tables of DATABASE_URL. Needs psycopg (`pip install "psycopg[binary]"`) and a server on this
machine (it reads /proc).

    scripts/durable-cluster.sh /tmp/rw-perf 55440
    DATABASE_URL=postgresql://postgres@127.0.0.1:55440/perf receipt-worker migrate
    scripts/queue-duty-costs.py postgresql://postgres@127.0.0.1:55440/perf --jobs 100000 --passes 3

Passes of one variant after another differ by up to ±3 µs per job on a VM whose speed drifts;
`--pair product,claim_without_request_join` measures two variants side by side instead (two
connections taking turns on the same queue), to within about ±0.2 µs per job with `--jobs 200000`.
"""
import argparse
import os
import statistics
import uuid

import psycopg

from queue_source import claim_sql

parser = argparse.ArgumentParser()
parser.add_argument("url")
parser.add_argument("--jobs", type=int, default=100000)
parser.add_argument("--passes", type=int, default=3)
parser.add_argument("--only", default="", help="comma-separated variant names")
parser.add_argument("--pair", default="", help="two variant names (not the yardstick), measured side by side")
arguments = parser.parse_args()
DB, JOBS, B = arguments.url, arguments.jobs, 1000
ONLY = [name for name in arguments.only.split(",") if name]

ENQ = """
TRUNCATE iap.job_queue, iap.job_requests, iap.job_ready, iap.job_parked, iap.job_flagged, iap.job_leases, iap.commit_witness, iap.job_finishes;
WITH requests AS (
  INSERT INTO iap.job_requests (id, kind, user_id, order_id, payload, dedup_key)
  SELECT nextval('iap.jobs_id_seq'), 'receipt', 'bench-user-' || (g %% 1000), 'bench-' || g, 'bm9vcA==',
         iap.job_dedup_key('receipt', 'bench-user-' || (g %% 1000), 'bench-' || g, 'bm9vcA==')
  FROM generate_series(1, %d) g RETURNING id, kind),
queued AS (INSERT INTO iap.job_queue (id, kind) SELECT id, kind FROM requests RETURNING id, state, run_at)
INSERT INTO iap.job_ready (id, state, run_at) SELECT id, state, run_at FROM queued;
"""

# QueueStore.claimSQL, read from the source and cut in three: the ready set's pick and the jobs
# marked running, the lease row, and the request read with the jobs (LEASE_ID: the lease row's
# id, or 0 without one).
CLAIM_SOURCE = claim_sql({1: "%(limit)s", 2: "%(w)s", 3: "%(lease)s", 4: "%(cached)s"})
PICK_AND_CLAIM = CLAIM_SOURCE[:CLAIM_SOURCE.index("), leased AS (") + 1]
LEASE = CLAIM_SOURCE[len(PICK_AND_CLAIM):CLAIM_SOURCE.index("), span AS (") + 1]
WITH_REQUESTS = CLAIM_SOURCE[len(PICK_AND_CLAIM) + len(LEASE):].replace("(SELECT id FROM leased)", "LEASE_ID")
CLAIM = PICK_AND_CLAIM + LEASE + WITH_REQUESTS.replace("LEASE_ID", "(SELECT id FROM leased)")
CLAIM_NOJOIN = PICK_AND_CLAIM + LEASE + " SELECT c.id, c.kind, c.attempts, (SELECT id FROM leased), c.ctid FROM claimed AS c"
CLAIM_NOLEASE = PICK_AND_CLAIM + WITH_REQUESTS.replace("LEASE_ID", "0")
CLAIM_BARE = PICK_AND_CLAIM + " SELECT id, 0, ctid FROM claimed"

RC = "(CASE WHEN cardinality(%(states)s::text[]) = 1 THEN 1 ELSE (%(codes)s::int[])[width_bucket(j.id, %(ids)s::bigint[])] END)"
UPD = """
UPDATE iap.job_queue AS j SET
    state = (%(states)s::text[])[RC],
    outcome = (%(outcomes)s::text[])[RC],
    run_at = now() + make_interval(secs => coalesce((%(delays)s::float8[])[RC], 0)),
    apple_status = coalesce((%(apple)s::int[])[RC], j.apple_status),
    last_error = (%(errors)s::text[])[RC],
    transaction_ids = CASE WHEN %(tx)s::jsonb -> j.id::text IS NULL THEN j.transaction_ids
                           ELSE ARRAY(SELECT jsonb_array_elements_text(%(tx)s::jsonb -> j.id::text)) END,
    finished_at = CASE WHEN (%(states)s::text[])[RC] IN ('done', 'failed', 'attention') THEN now() END,
    leased_by = NULL,
    lease_expires_at = NULL
WHERE j.id = ANY(%(ids)s::bigint[]) AND j.leased_by = %(w)s AND j.lease_expires_at > now()
RETURNING j.id, j.state, j.outcome, j.attempts
""".replace("RC", RC)
# A batch that moves a job into a side set returns what the side rows need (`movedColumns`).
UPD_PLACING = UPD.replace("RETURNING j.id, j.state, j.outcome, j.attempts",
                          "RETURNING j.id, j.state, j.run_at, j.finished_at, j.outcome, j.transaction_ids, j.attempts")
SIDE = """ready AS (
    INSERT INTO iap.job_ready (id, state, run_at)
    SELECT id, state, run_at FROM written WHERE state IN ('queued', 'retrying')
    ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, run_at = EXCLUDED.run_at
), parked AS (
    INSERT INTO iap.job_parked (id, run_at)
    SELECT id, run_at FROM written WHERE state = 'timed_out'
    ON CONFLICT (id) DO UPDATE SET run_at = EXCLUDED.run_at
), flagged AS (
    INSERT INTO iap.job_flagged (id, state, finished_at, owed_transaction_ids)
    SELECT id, state, coalesce(finished_at, now()), CASE WHEN outcome = 'paid_not_credited' THEN transaction_ids END
    FROM written WHERE state IN ('attention', 'failed')
    ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, finished_at = EXCLUDED.finished_at,
                                   owed_transaction_ids = EXCLUDED.owed_transaction_ids
), """
FIN = """finishes AS (
    INSERT INTO iap.job_finishes (state, outcome, jobs, retried)
    SELECT state, outcome, count(*), count(*) FILTER (WHERE attempts > 1) FROM written
    WHERE state IN ('done', 'failed', 'attention')
    GROUP BY state, outcome
)"""
WRITTEN = """SELECT count(*)::bigint, CASE WHEN count(*) = cardinality(%(ids)s::bigint[]) THEN NULL
                              ELSE ARRAY(SELECT unnest(%(ids)s::bigint[]) EXCEPT SELECT id FROM written) END
FROM written"""
WITNESS = """witness AS (
    INSERT INTO iap.commit_witness (token, lost_ids)
    SELECT %(token)s::uuid, CASE WHEN count(*) = cardinality(%(ids)s::bigint[]) THEN '{}'::bigint[]
                           ELSE ARRAY(SELECT unnest(%(ids)s::bigint[]) EXCEPT SELECT id FROM written) END
    FROM written
), """
# A batch of `done` results writes no side rows (`completeWitnessedDoneSQL`); one that moves a job
# into a side set does (`completeWitnessedSQL`).
COMPLETE_W = "WITH written AS (" + UPD + "), " + WITNESS + FIN + WRITTEN
COMPLETE_NOWIT = "WITH written AS (" + UPD + "), " + FIN + WRITTEN
COMPLETE_PLACING = "WITH written AS (" + UPD_PLACING + "), " + WITNESS + SIDE + FIN + WRITTEN
COMPLETE_UPDONLY = "WITH written AS (" + UPD + ") SELECT count(*) FROM written"
COMPLETE_UPDATE_ALONE = UPD.replace("RETURNING j.id, j.state, j.outcome, j.attempts", "")
COMPLETE_DONE_FUNCTION = """SELECT written, lost FROM iap.complete_done_jobs(%(ids)s::bigint[], %(versions)s::tid[], %(codes)s::int[], %(states)s::text[],
    %(outcomes)s::text[], %(delays)s::float8[], %(apple)s::int[], %(errors)s::text[], %(tx)s::jsonb, %(w)s, %(token)s::uuid,
    %(outcomes)s::text[], %(finished)s::int[], %(retried)s::int[])"""
COMPLETE_SIMPLE = """UPDATE iap.job_queue SET state = 'done', outcome = 'acknowledged', finished_at = now(), leased_by = NULL, lease_expires_at = NULL
WHERE id = ANY(%(ids)s::bigint[]) AND leased_by = %(w)s AND lease_expires_at > now()"""
DROP = """DELETE FROM iap.job_leases AS l
WHERE l.id = ANY(%(settled)s::bigint[])
   OR (l.id = ANY(%(unsure)s::bigint[]) AND NOT EXISTS (
       SELECT 1 FROM iap.job_queue AS j
       WHERE j.id = ANY(l.job_ids) AND j.state = 'running' AND j.leased_by = l.leased_by AND j.lease_expires_at = l.expires_at))"""

YS_SETUP = """DROP SCHEMA IF EXISTS ys CASCADE; CREATE SCHEMA ys;
CREATE TABLE ys.jobs (id bigint PRIMARY KEY, state text NOT NULL DEFAULT 'queued', attempts int NOT NULL DEFAULT 0,
  leased_by text, lease_expires_at timestamptz, outcome text) WITH (fillfactor = 50);
CREATE TABLE ys.ready (id bigint PRIMARY KEY);
INSERT INTO ys.jobs (id) SELECT g FROM generate_series(1, %d) g; INSERT INTO ys.ready SELECT g FROM generate_series(1, %d) g;
VACUUM ANALYZE ys.jobs, ys.ready; CHECKPOINT;"""
YS_CLAIM = """WITH c AS (DELETE FROM ys.ready WHERE id = ANY(ARRAY(SELECT id FROM ys.ready ORDER BY id
             LIMIT 1000 FOR UPDATE SKIP LOCKED)) RETURNING id),
u AS (UPDATE ys.jobs j SET state = 'running', attempts = attempts + 1, leased_by = 'w',
             lease_expires_at = now() + interval '60 s'
      WHERE j.id = ANY(ARRAY(SELECT id FROM c)) RETURNING j.id)
SELECT array_agg(id) FROM u"""
YS_DONE = "UPDATE ys.jobs SET state = 'done', outcome = 'credited', leased_by = NULL, lease_expires_at = NULL WHERE id = ANY(%(ids)s)"

def multi(c, text):
    for part in text.split(";"):
        if part.strip(): c.execute(part, prepare=False)

def cpu(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

# The row trigger that kept the side sets before migration 0038, for the variant that measures
# what dropping it saved (created for that variant's pass only, then dropped again).
OLD_TRIGGER_FUNCTION = """CREATE FUNCTION iap.job_state_entered_before_0038() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state IN ('queued', 'retrying') THEN
        INSERT INTO iap.job_ready (id, state, run_at) VALUES (NEW.id, NEW.state, NEW.run_at)
        ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, run_at = EXCLUDED.run_at;
    END IF;
    RETURN NULL;
END $$"""
OLD_TRIGGER = """CREATE TRIGGER job_state_entered_before_0038 AFTER UPDATE OF state, run_at, outcome, transaction_ids ON iap.job_queue FOR EACH ROW
    WHEN (NEW.state IN ('queued', 'retrying', 'timed_out', 'attention', 'failed')
          AND (NEW.state IS DISTINCT FROM OLD.state OR NEW.run_at IS DISTINCT FROM OLD.run_at
               OR NEW.outcome IS DISTINCT FROM OLD.outcome OR NEW.transaction_ids IS DISTINCT FROM OLD.transaction_ids))
    EXECUTE FUNCTION iap.job_state_entered_before_0038()"""
DROP_OLD_TRIGGER = """DROP TRIGGER IF EXISTS job_state_entered_before_0038 ON iap.job_queue;
DROP FUNCTION IF EXISTS iap.job_state_entered_before_0038()"""

def fill(c):
    """JOBS queued jobs in emptied tables, vacuumed and checkpointed before any pass reads them."""
    multi(c, ENQ % JOBS)
    c.execute("VACUUM ANALYZE iap.job_queue, iap.job_requests, iap.job_ready, iap.job_leases", prepare=False)
    c.execute("CHECKPOINT", prepare=False)


def run(name, claim, complete, drop=True, tx=True, yard=False, old_trigger=False):
    with psycopg.connect(DB, autocommit=True, prepare_threshold=0) as c:
        if yard:
            multi(c, YS_SETUP % (JOBS, JOBS))
        else:
            fill(c)
            if old_trigger:
                c.execute(OLD_TRIGGER_FUNCTION, prepare=False)
                c.execute(OLD_TRIGGER, prepare=False)
        pid = c.execute("SELECT pg_backend_pid()").fetchone()[0]
        lsn0 = c.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
        c0 = cpu(pid)
        try:
            n = drain(c, claim, complete, drop, tx, yard)
        finally:
            if old_trigger:
                multi(c, DROP_OLD_TRIGGER)
        dc = cpu(pid) - c0
        wal = c.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", (lsn0,)).fetchone()[0]
        c.execute("DROP SCHEMA IF EXISTS ys CASCADE", prepare=False)
    return dc / n * 1e6, wal / n


def drain(c, claim, complete, drop, tx, yard):
    n = 0
    while True:
        if yard:
            ids = c.execute(YS_CLAIM).fetchone()[0]
            if not ids:
                return n
            c.execute(YS_DONE, {"ids": ids})
            n += len(ids)
            continue
        claimed = cycle(c, claim, complete, drop, tx)
        if claimed == 0:
            return n
        n += claimed


def cycle(c, claim, complete, drop=True, tx=True):
    """One claim of up to B jobs and its completion; the number of jobs claimed."""
    rows = c.execute(claim, {"limit": B, "w": "w1", "lease": 60.0, "cached": []}).fetchall()
    if not rows:
        return 0
    ids = sorted(r[0] for r in rows)
    p = {"ids": ids, "codes": [1] * len(ids), "states": ["done"], "outcomes": ["acknowledged"], "delays": [None],
         "apple": [None], "errors": [None], "tx": "{}", "w": "w1", "token": uuid.uuid4(), "settled": [rows[0][-2]], "unsure": [],
         "finished": [len(ids)], "retried": [0], "versions": [r[-1] for r in rows]}
    if tx:
        with c.transaction():
            c.execute(complete, p)
            if drop:
                c.execute(DROP, p)
    else:
        c.execute(complete, p)
    return len(ids)


def paired(first, second, rounds):
    """Two variants side by side: one connection each, taking turns a claim and its completion at
    a time from the same queue, so the machine's drift (which moves whole passes by ±3 µs per job
    here) falls on both alike. Which one starts alternates by round."""
    found = {name: (claim, complete, options) for name, claim, complete, options in variants}
    differences = []
    for round_number in range(rounds):
        with psycopg.connect(DB, autocommit=True) as c:
            fill(c)
        sides = []
        for name in (first, second):
            claim, complete, options = found[name]
            connection = psycopg.connect(DB, autocommit=True, prepare_threshold=0)
            pid = connection.execute("SELECT pg_backend_pid()").fetchone()[0]
            sides.append({"c": connection, "pid": pid, "claim": claim, "complete": complete,
                          "drop": options.get("drop", True), "tx": options.get("tx", True), "jobs": 0})
        for side in sides:  # plans made before the clock starts
            cycle(side["c"], side["claim"], side["complete"], side["drop"], side["tx"])
        for side in sides:
            side["cpu"] = cpu(side["pid"])
        turn = round_number % 2
        while True:
            side = sides[turn % 2]
            claimed = cycle(side["c"], side["claim"], side["complete"], side["drop"], side["tx"])
            if claimed == 0:
                break
            side["jobs"] += claimed
            turn += 1
        per_job = [(cpu(side["pid"]) - side["cpu"]) / side["jobs"] * 1e6 for side in sides]
        for side in sides:
            side["c"].close()
        differences.append(per_job[1] - per_job[0])
        print("round %d: %s server_cpu_us_per_job=%.2f %s server_cpu_us_per_job=%.2f difference=%+.2f"
              % (round_number + 1, first, per_job[0], second, per_job[1], per_job[1] - per_job[0]), flush=True)
    print("%s minus %s: median %+.2f µs per job (rounds %s)"
          % (second, first, statistics.median(differences), " ".join("%+.2f" % d for d in differences)))

variants = [
    ("yardstick", None, None, dict(yard=True)),
    ("product", CLAIM, COMPLETE_DONE_FUNCTION, {}),
    ("completion_statement", CLAIM, COMPLETE_W, {}),
    ("with_the_row_trigger_of_0037", CLAIM, COMPLETE_W, dict(old_trigger=True)),
    ("claim_without_request_join", CLAIM_NOJOIN, COMPLETE_W, {}),
    ("claim_without_lease_row", CLAIM_NOLEASE, COMPLETE_W, dict(drop=False)),
    ("completion_without_witness", CLAIM, COMPLETE_NOWIT, {}),
    ("completion_update_only", CLAIM, COMPLETE_UPDONLY, {}),
    ("completion_simple_update", CLAIM, COMPLETE_SIMPLE, {}),
    ("completion_update_alone", CLAIM, COMPLETE_UPDATE_ALONE, {}),
    ("completion_placing_side_rows", CLAIM, COMPLETE_PLACING, {}),
    ("bare_claim_simple_update", CLAIM_BARE, COMPLETE_SIMPLE, dict(drop=False, tx=False)),
]

if arguments.pair:
    pair = arguments.pair.split(",")
    known = [name for name, claim, _, _ in variants if claim is not None]
    if len(pair) != 2 or any(name not in known for name in pair):
        parser.exit(2, "queue-duty-costs: --pair takes two of: " + ", ".join(known) + "\n")
    paired(*pair, arguments.passes)
    raise SystemExit(0)

results = {}
for round_number in range(arguments.passes):
    for name, claim, complete, options in variants:
        if ONLY and name not in ONLY:
            continue
        results.setdefault(name, []).append(run(name, claim, complete, **options))
base = statistics.median(r[0] for r in results.get("product", [(0, 0)]))
for name, rounds in results.items():
    median = statistics.median(r[0] for r in rounds)
    least = min(r[0] for r in rounds)
    print("%-28s server_cpu_us_per_job=%.1f (rounds %s, least %.1f) vs_product=%+.1f wal_bytes_per_job=%.0f"
          % (name, median, " ".join("%.1f" % r[0] for r in rounds), least, median - base, rounds[0][1]), flush=True)
