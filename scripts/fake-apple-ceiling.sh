#!/usr/bin/env bash
# What scripts/fake-apple.py itself allows at a given number of requests in flight: wrk (Debian's,
# one thread, next to no CPU per request) keeps IN_FLIGHT requests open against the fake for as
# long as it takes the fake to write REQUESTS answers, with no worker and no database beside it.
# `bench apple --in-flight IN_FLIGHT --apple-url …` asks the fake the same number of requests
# (120,000 at 10,000 in flight: twelve waves), so its ratio can be read against this one: the
# fake is one Python thread, and a client that needs no CPU at all still waits on it.
#
# Usage: scripts/fake-apple-ceiling.sh [IN_FLIGHT] [REQUESTS] [LATENCY] [PORT]
#        (defaults: 10000 120000 3 18191)
# Prints the fake's timeline (seconds since its first connection, every IN_FLIGHT answers) and
#   ceiling in_flight=… requests=… seconds=… answers_per_s=… ratio_to_bound=…
# where the bound is IN_FLIGHT / LATENCY answers a second.
set -euo pipefail
in_flight=${1:-10000}
requests=${2:-120000}
latency=${3:-3}
port=${4:-18191}
command -v wrk >/dev/null || { echo "fake-apple-ceiling: wrk is not installed (apt-get install wrk)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cleanup() { kill "${wrk_pid:-}" "${fake_pid:-}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# A receipt the fake understands (base64 of a JSON object, as apple-sim mints them).
receipt=$(python3 -c 'import base64, json; print(base64.b64encode(json.dumps({"bundle_id": "com.example.bench", "environment": "Production", "transactions": [{"transaction_id": "ceiling-1", "product_id": "coins_100", "quantity": 1}]}).encode()).decode())')
cat > "$work/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"receipt-data":"$receipt","password":"ceiling"}'
LUA

python3 "$here/fake-apple.py" --port "$port" --latency "$latency" --timeline "$in_flight" > "$work/fake.out" &
fake_pid=$!
for _ in $(seq 1 50); do grep -q listening "$work/fake.out" 2>/dev/null && break; sleep 0.1; done
# Long enough for every answer even at a third of the bound; stopped as soon as the last is written.
seconds=$(awk -v r="$requests" -v l="$latency" -v f="$in_flight" 'BEGIN { print int(r * l * 3 / f) + 10 }')  # LATENCY may be fractional
wrk -t1 -c"$in_flight" -d"${seconds}s" --timeout 30s -s "$work/post.lua" "http://127.0.0.1:$port/verifyReceipt" > "$work/wrk.out" 2>&1 &
wrk_pid=$!
while kill -0 "$wrk_pid" 2>/dev/null && ! grep -q "^answered $requests " "$work/fake.out"; do sleep 0.2; done
grep "^answered" "$work/fake.out" || true
last=$(grep "^answered $requests " "$work/fake.out" | awk '{print $3}')
[ -n "$last" ] || { echo "fake-apple-ceiling: the fake did not write $requests answers; wrk said:" >&2; tail -5 "$work/wrk.out" >&2; exit 1; }
python3 - "$in_flight" "$requests" "$latency" "$last" <<'PY'
import sys
in_flight, requests, latency, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
rate = requests / seconds
print(f"ceiling in_flight={in_flight} requests={requests} seconds={seconds:.2f} answers_per_s={rate:.0f} "
      f"ratio_to_bound={rate / (in_flight / latency):.2f}")
PY
