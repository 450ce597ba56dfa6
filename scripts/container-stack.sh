#!/usr/bin/env bash
# The container image and the compose stack, built and run end to end with podman, buildah,
# runc and podman-compose from Debian, without any registry (CI runs exactly this):
#
#   scripts/container-stack.sh            # everything below, then the stack comes down
#   KEEP_STACK=1 scripts/container-stack.sh   # leave the stack running afterwards
#
#  1. the release binary, built on the host with --static-swift-stdlib (.build-release), and ldd
#     checked: it may need only what Debian's libpq5, libssl3, zlib1g, libcurl4 and libc give;
#  2. the base image debian:bookworm-slim: reused from local storage, else pulled, else made from
#     Debian's own packages (debootstrap --variant=minbase bookworm + podman import);
#  3. the images: receipt-worker:local (docker/Dockerfile, stage `prebuilt`: the runtime stage
#     with the host's binary), and, for CI only, PostgreSQL 15 and Prometheus from the same base
#     (docker/ci/, named by docker/compose.ci.yaml; users keep postgres:15 and prom/prometheus);
#  4. the stack of docker/compose.yaml: db, migrate (one-shot), ingest, 3 × work (each with
#     apple-sim on its loopback), console, prometheus;
#  5. the probe: orders inserted the way a web tier does, paid receipts POSTed to ingest with the
#     token, one worker container killed while it holds jobs, every receipt credited exactly once,
#     a worker's /metrics read, Prometheus's rules and targets, a sign-in to the console over HTTP;
#  6. down: containers, the network and the volume removed (also on failure).
#
# Exit codes: 0 all held; 1 a check failed; 3 containers cannot run on this machine (missing
# tools or privileges: one line says which).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

BASE_IMAGE=${BASE_IMAGE:-debian:bookworm-slim}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
RECEIPTS=${RECEIPTS:-240}
PROJECT=receipt-worker
COMPOSE=(podman-compose -p "$PROJECT" -f docker/compose.yaml -f docker/compose.ci.yaml)
export INGEST_TOKEN=${INGEST_TOKEN:-ci-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')}
STARTED=$(date +%s)
STEP_STARTED=$STARTED

say() { printf 'container-stack: %s\n' "$*"; }
fail() { say "FAILED: $*"; exit 1; }
cannot() { say "cannot run containers here: $*"; exit 3; }
step() {  # step NAME: prints how long the previous step took, then names the next
    local now; now=$(date +%s)
    [ -n "${STEP:-}" ] && say "step $STEP took $((now - STEP_STARTED)) s"
    STEP=$1; STEP_STARTED=$now
    say "step $STEP"
}

# ---- 0. tools and privileges ----------------------------------------------------------------
for tool in podman buildah podman-compose curl; do
    command -v "$tool" >/dev/null 2>&1 || cannot "$tool is not installed (apt-get install podman buildah runc debootstrap podman-compose curl)"
done
cleanup() {
    local code=$?
    if [ "${KEEP_STACK:-0}" != 1 ] && [ -n "${STACK_UP:-}" ]; then
        [ "$code" != 0 ] && { say "logs of the stack (last lines of each):"; for c in $(podman ps -a --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}}'); do echo "--- $c"; podman logs --tail 15 "$c" 2>&1 | cut -c1-400; done; }
        "${COMPOSE[@]}" down -v -t 30 >"$WORK/down.log" 2>&1 || true
        podman network rm -f "${PROJECT}_default" >/dev/null 2>&1 || true
        podman volume rm -f "${PROJECT}_pgdata" >/dev/null 2>&1 || true
        left=$(podman ps -a --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}}' | wc -l)
        [ "$left" = 0 ] || { say "containers left after down: $left"; code=1; }
    fi
    [ -n "${WORK:-}" ] && rm -rf "$WORK"
    say "total $(( $(date +%s) - STARTED )) s"
    exit "$code"
}
trap cleanup EXIT
WORK=$(mktemp -d /tmp/receipt-worker-stack.XXXXXX)
if [ -z "${CONTAINERS_CONF:-}" ]; then
    # runc, not crun (crun refuses cgroups in hybrid mode); limits no higher than this machine
    # grants: podman asks for more than an unprivileged hard limit allows, and starts its
    # runtime with at most 32768 processes.
    nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
    [ "$nofile" = unlimited ] && nofile=1048576
    { [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; } && nproc=32768
    runtime=""
    command -v runc >/dev/null 2>&1 && runtime='runtime = "runc"'
    printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n[engine]\n%s\n' \
        "$nofile" "$nofile" "$nproc" "$nproc" "$runtime" > "$WORK/containers.conf"
    export CONTAINERS_CONF=$WORK/containers.conf
fi
podman info >/dev/null 2>"$WORK/podman-info.err" || cannot "podman info failed: $(head -1 "$WORK/podman-info.err")"


# ---- 1. the release binary --------------------------------------------------------------------
step "release binary"
if [ -n "${RECEIPT_WORKER_BINARY:-}" ]; then
    BINARY=$RECEIPT_WORKER_BINARY
else
    swift build -c release --static-swift-stdlib --product receipt-worker --scratch-path .build-release >"$WORK/build.log" 2>&1 \
        || { tail -20 "$WORK/build.log"; fail "swift build -c release --static-swift-stdlib"; }
    BINARY=$(swift build -c release --scratch-path .build-release --show-bin-path)/receipt-worker
fi
[ -x "$BINARY" ] || fail "no binary at $BINARY"
# Every library it links directly must come from the runtime stage's packages (or libc, libstdc++,
# libgcc): libpq5, libssl3 (libssl, libcrypto), zlib1g, libcurl4.
needed=$(readelf -d "$BINARY" | awk '/NEEDED/ {gsub(/[][]/, "", $5); print $5}')
unexpected=$(printf '%s\n' "$needed" | grep -v -E '^(libc|libm|libpthread|libdl|librt|libutil|libstdc\+\+|libgcc_s|ld-linux-x86-64|ld-linux-aarch64|libpq|libssl|libcrypto|libz|libcurl)\.so' || true)
[ -z "$unexpected" ] || fail "the binary needs libraries the image does not install: $unexpected"
say "binary $(du -m "$BINARY" | cut -f1) MB, links: $(echo $needed)"

# ---- 2. the base image -----------------------------------------------------------------------
step "base image"
if podman image exists "$BASE_IMAGE"; then
    say "$BASE_IMAGE: in local storage"
elif timeout 30 podman pull -q "$BASE_IMAGE" >/dev/null 2>&1; then
    say "$BASE_IMAGE: pulled"
else
    say "$BASE_IMAGE: no registry answers; making it from Debian's packages ($DEBIAN_MIRROR)"
    command -v debootstrap >/dev/null 2>&1 || cannot "debootstrap is not installed and no registry answers"
    [ "$(id -u)" = 0 ] || cannot "debootstrap needs root to make $BASE_IMAGE (or pull it from a registry)"
    debootstrap --variant=minbase bookworm "$WORK/rootfs" "$DEBIAN_MIRROR" >"$WORK/debootstrap.log" 2>&1 \
        || { tail -5 "$WORK/debootstrap.log"; fail "debootstrap"; }
    # Trimmed as Debian's -slim images are: no documentation, manuals or translations, no apt caches.
    cat > "$WORK/rootfs/etc/dpkg/dpkg.cfg.d/slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
EOF
    find "$WORK/rootfs/usr/share/doc" -mindepth 2 -not -name copyright -not -type d -delete
    rm -rf "$WORK"/rootfs/usr/share/{man,info,lintian}/* "$WORK"/rootfs/var/lib/apt/lists/* \
           "$WORK"/rootfs/var/cache/apt/*.bin "$WORK"/rootfs/var/cache/apt/archives/*.deb
    find "$WORK/rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
    tar -C "$WORK/rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >"$WORK/import.log" 2>&1 \
        || { cat "$WORK/import.log"; fail "podman import"; }
    rm -rf "$WORK/rootfs"
fi

# ---- 3. the images ---------------------------------------------------------------------------
step "images"
# The build context: only what the runtime stage copies (not the repository and its build trees).
mkdir -p "$WORK/context"
cp "$BINARY" "$WORK/context/receipt-worker"
cp -r Migrations "$WORK/context/Migrations"
podman build -q --format docker --network=host -f docker/Dockerfile --target prebuilt --build-arg "BASE_IMAGE=$BASE_IMAGE" \
    -t receipt-worker:local "$WORK/context" >/dev/null || fail "podman build docker/Dockerfile"
for pair in db:postgres prometheus:prometheus; do
    service=${pair%%:*} ci=${pair#*:}
    image=$(awk -v s="$service" '$1 == s":" {found=1} found && $1 == "image:" {print $2; exit}' docker/compose.ci.yaml)
    # Built every time: podman's layer cache makes an unchanged one take a second.
    podman build -q --format docker --network=host -f "docker/ci/$ci.Containerfile" --build-arg "BASE_IMAGE=$BASE_IMAGE" \
        -t "$image" docker/ci >/dev/null || fail "podman build docker/ci/$ci.Containerfile"
done
size=$(podman image inspect --format '{{.Size}}' receipt-worker:local)
base_size=$(podman image inspect --format '{{.Size}}' "$BASE_IMAGE")
say "image receipt-worker:local $((size / 1000000)) MB (base $BASE_IMAGE $((base_size / 1000000)) MB)"
podman run --rm --entrypoint sh receipt-worker:local -c \
    'test "$(id -u):$(id -g)" = 10001:10001 && ! command -v cc && ! command -v gcc && ! command -v swiftc && test -f /usr/share/receipt-worker/Migrations/0001_*.sql' >/dev/null \
    || fail "the image: not the non-root user and group 10001, a compiler inside, or no migrations"
missing=$(podman run --rm --entrypoint ldd receipt-worker:local /usr/local/bin/receipt-worker | grep 'not found' || true)
[ -z "$missing" ] || fail "libraries missing in the image: $missing"
podman run --rm receipt-worker:local --help >/dev/null || fail "the binary does not start in the image"

# ---- 4. the stack ----------------------------------------------------------------------------
step "stack up"
STACK_UP=1
# What an interrupted run may have left.
"${COMPOSE[@]}" down -v -t 5 >/dev/null 2>&1 || true
podman network rm -f "${PROJECT}_default" >/dev/null 2>&1 || true
podman volume rm -f "${PROJECT}_pgdata" >/dev/null 2>&1 || true
SERVICES=(db migrate ingest work console prometheus)
psql_db() { podman exec -i "${PROJECT}_db_1" psql -X -q -A -t -v ON_ERROR_STOP=1 -U receipt_worker -d receipts "$@"; }
# podman-compose starts containers in order but does not wait for conditions (service_healthy,
# service_completed_successfully): wait for each here.
"${COMPOSE[@]}" up -d --no-build db >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log"; fail "compose up db"; }
for _ in $(seq 120); do podman exec "${PROJECT}_db_1" pg_isready -q -U receipt_worker -d receipts 2>/dev/null && break; sleep 1; done
podman exec "${PROJECT}_db_1" pg_isready -q -U receipt_worker -d receipts \
    || { cat "$WORK/up.log"; podman ps -a --format '{{.Names}} {{.Status}}'; fail "PostgreSQL did not start"; }
"${COMPOSE[@]}" up -d --no-build "${SERVICES[@]}" >>"$WORK/up.log" 2>&1 || { cat "$WORK/up.log"; fail "compose up"; }
code=$(podman wait "${PROJECT}_migrate_1")
[ "$code" = 0 ] || { podman logs "${PROJECT}_migrate_1" | tail -5; fail "migrate exited $code"; }
psql_db -c "SELECT 1 FROM iap.schema_migrations LIMIT 1" >/dev/null || fail "no migrations recorded"
# The others may have started before the schema existed and exited: start them again.
for service in ingest work console prometheus; do
    for c in $(podman ps -a --filter "label=io.podman.compose.project=$PROJECT" --filter "label=com.docker.compose.service=$service" --filter status=exited --format '{{.Names}}'); do
        podman start "$c" >/dev/null
    done
done
for _ in $(seq 60); do curl -sf -o /dev/null http://127.0.0.1:8080/healthz && break; sleep 1; done
curl -sf -o /dev/null http://127.0.0.1:8080/healthz || fail "ingest /healthz did not answer on 127.0.0.1:8080"
WORKERS=($(podman ps --filter "label=io.podman.compose.project=$PROJECT" --filter "label=com.docker.compose.service=work" --format '{{.Names}}' | sort))
[ "${#WORKERS[@]}" = 3 ] || fail "expected 3 work containers, found ${#WORKERS[@]}: ${WORKERS[*]}"
# http inside a container, through bash's /dev/tcp (the image has no curl).
http_in() {  # http_in CONTAINER PORT PATH: the response, headers and body
    podman exec "$1" bash -c "exec 3<>/dev/tcp/127.0.0.1/$2 && printf 'GET $3 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' >&3 && cat <&3"
}
for w in "${WORKERS[@]}"; do
    for _ in $(seq 60); do http_in "$w" 9464 /readyz 2>/dev/null | head -1 | grep -q ' 200' && break; sleep 1; done
    http_in "$w" 9464 /readyz | head -1 | grep -q ' 200' || fail "$w: /readyz is not 200"
done
# The image's HEALTHCHECK (GET /healthz on HEALTH_PORT) as the engine runs it.
for c in "${WORKERS[@]}" "${PROJECT}_ingest_1" "${PROJECT}_console_1"; do
    podman healthcheck run "$c" >/dev/null 2>&1 || fail "$c: the image's HEALTHCHECK does not pass"
done
say "up: ${SERVICES[*]} (work × ${#WORKERS[@]}); HEALTHCHECK passes in work, ingest, console"

# ---- 5. the probe ----------------------------------------------------------------------------
step "receipts"
# The web tier's part: one open order per purchase, then the receipt handed over with the token.
psql_db -c "INSERT INTO iap.orders (order_id, user_id, product_id)
            SELECT 'stack-' || g, 'user-' || g, 'com.example.coins100' FROM generate_series(1, $RECEIPTS) g" >/dev/null
now_ms=$(( $(date +%s) * 1000 ))
for i in $(seq "$RECEIPTS"); do
    # A receipt apple-sim verifies as paid: base64 of its JSON (see apple-sim in docs/reference.md).
    receipt=$(printf '{"bundle_id":"com.example.app","environment":"Production","sim":1,"transactions":[{"product_id":"com.example.coins100","purchase_date_ms":%s,"quantity":1,"transaction_id":"7000%06d"}]}' "$now_ms" "$i" | base64 -w0)
    printf '{"user_id":"user-%s","order_id":"stack-%s","product_id":"com.example.coins100","receipt_data":"%s"}\n' "$i" "$i" "$receipt"
done > "$WORK/receipts.ndjson"
posted=0
while IFS= read -r body; do
    status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $INGEST_TOKEN" -H 'Content-Type: application/json' \
        --data-binary "$body" http://127.0.0.1:8080/v1/receipts)
    [ "$status" = 202 ] || fail "POST /v1/receipts answered $status"
    posted=$((posted + 1))
done < "$WORK/receipts.ndjson"
status=$(curl -s -o /dev/null -w '%{http_code}' --data-binary '{}' http://127.0.0.1:8080/v1/receipts)
[ "$status" = 401 ] || fail "POST /v1/receipts without the token answered $status, not 401"
say "posted $posted receipts (202 each; 401 without the token)"

step "kill a worker"
# The worker holding the most jobs in flight (Apple, here apple-sim, takes 3-6 s), killed outright.
victim="" held=0
for _ in $(seq 100); do
    for w in "${WORKERS[@]}"; do
        host=$(podman inspect --format '{{.Config.Hostname}}' "$w")
        n=$(psql_db -c "SELECT count(*) FROM iap.jobs WHERE state = 'running' AND leased_by LIKE '$host:%'")
        if [ "$n" -gt "$held" ]; then victim=$w; held=$n; victim_host=$host; fi
    done
    [ "$held" -gt 0 ] && break
    sleep 0.2
done
[ -n "$victim" ] || fail "no worker held a job to kill it with"
psql_db -c "SELECT id FROM iap.jobs WHERE state = 'running' AND leased_by LIKE '$victim_host:%'" > "$WORK/victim-jobs"
podman kill -s KILL "$victim" >/dev/null
held=$(wc -l < "$WORK/victim-jobs")
say "killed $victim (SIGKILL) holding $held jobs; their leases bring them to the others"
sleep 1
[ "$(podman inspect --format '{{.State.Running}}' "$victim")" = false ] || fail "$victim was restarted"

step "credited exactly once"
for _ in $(seq 240); do
    left=$(psql_db -c "SELECT count(*) FROM iap.jobs WHERE state NOT IN ('done', 'failed', 'attention')")
    [ "$left" = 0 ] && break
    sleep 1
done
[ "$left" = 0 ] || fail "$left jobs not finished"
read -r credits distinct orders credited_jobs alerts <<<"$(psql_db -F ' ' -c "
    SELECT (SELECT count(*) FROM iap.credits),
           (SELECT count(DISTINCT order_id) FROM iap.credits),
           (SELECT count(*) FROM iap.orders WHERE status = 'credited'),
           (SELECT count(*) FROM iap.jobs WHERE state = 'done' AND outcome = 'credited'),
           (SELECT count(*) FROM iap.alerts)")"
[ "$credits" = "$RECEIPTS" ] && [ "$distinct" = "$RECEIPTS" ] && [ "$orders" = "$RECEIPTS" ] && [ "$credited_jobs" = "$RECEIPTS" ] && [ "$alerts" = 0 ] \
    || fail "credits $credits, orders credited $distinct/$orders, jobs credited $credited_jobs, alerts $alerts; expected $RECEIPTS each and no alert"
ids=$(paste -sd, "$WORK/victim-jobs")
finished=$(psql_db -c "SELECT count(*) FROM iap.jobs WHERE id IN ($ids) AND state = 'done' AND outcome = 'credited'")
[ "$(podman inspect --format '{{.State.Running}}' "$victim")" = false ] || fail "$victim is running again" 
[ "$finished" = "$held" ] || fail "of the killed worker's $held jobs, $finished were credited by the others"
say "$credits receipts credited once each (ledger, orders, jobs), no alert; the killed worker's $held jobs finished on the others"

step "metrics, prometheus, console"
survivor=$(printf '%s\n' "${WORKERS[@]}" | grep -v -x "$victim" | head -1)
metrics=$(http_in "$survivor" 9464 /metrics)
grep -q '^iap_credits_total [1-9]' <<<"$metrics" || fail "$survivor: /metrics has no iap_credits_total above 0"
say "$survivor /metrics: $(grep '^iap_credits_total ' <<<"$metrics")"
prom() {  # prom PATH PYTHON-EXPRESSION-OF-d: a number read from Prometheus's JSON API
    curl -sf "http://127.0.0.1:9090$1" 2>/dev/null | python3 -c "import json, sys; d = json.load(sys.stdin)['data']; print(int($2))" 2>/dev/null || echo 0
}
for _ in $(seq 60); do
    rules=$(prom /api/v1/rules "sum(1 for g in d['groups'] for r in g['rules'] if r['type'] == 'alerting')")
    up=$(prom '/api/v1/query?query=sum(up%7Bjob%3D%22receipt-worker%22%7D)' "float(d['result'][0]['value'][1]) if d['result'] else 0")
    [ "$rules" -gt 0 ] && [ "$up" -ge 2 ] && break
    sleep 2
done
[ "$rules" -gt 0 ] || fail "Prometheus has no alert rules loaded"
[ "$up" -ge 2 ] || fail "Prometheus scrapes $up workers, not the 2 still running"
say "prometheus: $rules alert rules loaded, $up workers up"
# The console: an operator, then a sign-in over HTTP as a browser does it (form, CSRF cookie, session).
printf '%s\n' 'container-stack-passphrase' | podman exec -i "${PROJECT}_console_1" receipt-worker console add-user ci-operator --role viewer >/dev/null
curl -s -D "$WORK/login.h" -o "$WORK/login.html" http://127.0.0.1:8090/login
csrf_cookie=$(awk 'tolower($1) == "set-cookie:" {sub(/;.*/, "", $2); print $2}' "$WORK/login.h" | tr -d '\r' | head -1)
csrf=$(grep -o 'name="csrf" value="[0-9a-f]*"' "$WORK/login.html" | sed 's/.*value="//; s/"//')
[ -n "$csrf" ] && [ -n "$csrf_cookie" ] || fail "the console's sign-in form has no CSRF token"
curl -s -D "$WORK/signin.h" -o /dev/null -H "Cookie: $csrf_cookie" --data-urlencode "csrf=$csrf" \
    --data-urlencode user=ci-operator --data-urlencode password=container-stack-passphrase http://127.0.0.1:8090/login
session=$(awk 'tolower($1) == "set-cookie:" && $2 ~ /session/ {sub(/;.*/, "", $2); print $2}' "$WORK/signin.h" | tr -d '\r' | head -1)
head -1 "$WORK/signin.h" | grep -q ' 303' && [ -n "$session" ] || fail "console sign-in: $(head -1 "$WORK/signin.h")"
curl -s -o "$WORK/home.html" -w '%{http_code}' -H "Cookie: $session" http://127.0.0.1:8090/ | grep -q 200 \
    && grep -q 'ci-operator' "$WORK/home.html" || fail "the console's first page after sign-in"
say "console: signed in as ci-operator over HTTP"

if [ "${KEEP_STACK:-0}" = 1 ]; then
    step "done (the stack is left running; to stop it: INGEST_TOKEN=... ${COMPOSE[*]} down -v && podman network rm ${PROJECT}_default)"
    exit 0
fi
step "down"
"${COMPOSE[@]}" down -v -t 30 >"$WORK/down.log" 2>&1 || { cat "$WORK/down.log"; fail "compose down"; }
podman network rm -f "${PROJECT}_default" >/dev/null 2>&1 || true
podman volume rm -f "${PROJECT}_pgdata" >/dev/null 2>&1 || true
STACK_UP=""
left=$(podman ps -a --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}}' | wc -l)
[ "$left" = 0 ] || fail "$left containers left after down"
step "all held"
