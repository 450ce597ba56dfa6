#!/usr/bin/env bash
# The deployment manifests, checked without a cluster or a booted systemd (CI runs exactly this):
#
#   scripts/check-manifests.sh                          # all checks below
#   scripts/check-manifests.sh --write-prometheus-rule  # regenerate the PrometheusRule from rules.yml
#
#  1. deploy/kubernetes/*.yaml against the Kubernetes schemas of one pinned version
#     (kubernetes-validate --strict: unknown fields fail); kustomization.yaml lists every manifest
#     but the Secret template;
#  2. the custom resources the schemas do not know: the PrometheusRule's spec is exactly
#     docker/prometheus/rules.yml (and promtool checks it), the ServiceMonitor's ports exist;
#  3. deploy/systemd/*.service with `systemd-analyze verify`, in a scratch root holding the
#     units, the system's own units and a stand-in /usr/local/bin/receipt-worker; any warning fails.
#
# Needs: python3 with PyYAML and kubernetes-validate (pip), promtool, systemd-analyze.
# Exit codes: 0 all held; 1 a check failed; 3 a tool is missing (one line says which).
set -euo pipefail
cd "$(dirname "$0")/.."

KUBERNETES_VERSION=${KUBERNETES_VERSION:-1.33.0}
K8S=deploy/kubernetes
say() { printf 'check-manifests: %s\n' "$*"; }
fail() { say "FAILED: $*"; exit 1; }
missing() { say "missing tool: $*"; exit 3; }

write_rule() {
    {
        sed -n '1,/^spec:$/p' "$K8S/prometheusrule.yaml"
        grep -v '^#' docker/prometheus/rules.yml | sed 's/^/  /; s/^  $//'
    } > "$K8S/prometheusrule.yaml.new"
    mv "$K8S/prometheusrule.yaml.new" "$K8S/prometheusrule.yaml"
}
if [ "${1:-}" = --write-prometheus-rule ]; then write_rule; say "wrote $K8S/prometheusrule.yaml"; exit 0; fi

python3 -c 'import kubernetes_validate' 2>/dev/null || missing "kubernetes-validate (python3 -m pip install kubernetes-validate)"
python3 -c 'import yaml' 2>/dev/null || missing "PyYAML (python3 -m pip install pyyaml)"
command -v promtool >/dev/null 2>&1 || missing "promtool (apt-get install prometheus)"
command -v systemd-analyze >/dev/null 2>&1 || missing "systemd-analyze (apt-get install systemd)"
validate() { python3 -m kubernetes_validate "$@"; }
WORK=$(mktemp -d /tmp/receipt-worker-manifests.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# ---- 1. the Kubernetes schemas ---------------------------------------------------------------
out=$(validate --strict --kubernetes-version "$KUBERNETES_VERSION" "$K8S"/*.yaml 2>&1) || { printf '%s\n' "$out"; fail "kubernetes-validate"; }
# Only these kinds may lack a schema: a typo in a core kind's apiVersion must not pass unseen.
unknown=$(printf '%s\n' "$out" | grep -E '^WARN' | grep -v -E "schema for kind (Kustomization|ServiceMonitor|PrometheusRule) " || true)
[ -z "$unknown" ] || { printf '%s\n' "$unknown"; fail "resources without a schema"; }
passed=$(printf '%s\n' "$out" | grep -c ' passed for resource ' || true)
say "kubernetes $KUBERNETES_VERSION (strict): $passed resources valid"

python3 - "$K8S" <<'EOF' || fail "deploy/kubernetes"
import os, sys, yaml
root = sys.argv[1]
kustomization = yaml.safe_load(open(os.path.join(root, "kustomization.yaml")))
listed = set(kustomization["resources"])
files = {f for f in os.listdir(root) if f.endswith(".yaml")} - {"kustomization.yaml", "secret.example.yaml"}
if listed != files:
    sys.exit(f"check-manifests: kustomization.yaml resources {sorted(listed)} differ from the manifests {sorted(files)}")
docs = [d for f in sorted(files) for d in yaml.safe_load_all(open(os.path.join(root, f))) if d]
kinds = {(d["kind"], d["metadata"]["name"]): d for d in docs}
# The PrometheusRule is docker/prometheus/rules.yml, unchanged: one source of truth.
rule = kinds[("PrometheusRule", "receipt-worker")]
if rule["spec"] != yaml.safe_load(open("docker/prometheus/rules.yml")):
    sys.exit("check-manifests: prometheusrule.yaml's spec differs from docker/prometheus/rules.yml "
             "(scripts/check-manifests.sh --write-prometheus-rule)")
# The ServiceMonitor's selector and ports meet the Services.
monitor = kinds[("ServiceMonitor", "receipt-worker")]
wanted = set(monitor["spec"]["selector"]["matchExpressions"][0]["values"])
services = [d for d in docs if d["kind"] == "Service"]
scraped = {d["metadata"]["labels"]["app.kubernetes.io/component"] for d in services
           if d["metadata"]["labels"].get("app.kubernetes.io/component") in wanted}
ports = {p["name"] for d in services for p in d["spec"]["ports"]}
if scraped != wanted or not {e["port"] for e in monitor["spec"]["endpoints"]} <= ports:
    sys.exit(f"check-manifests: the ServiceMonitor selects {sorted(wanted)}, Services {sorted(scraped)}, ports {sorted(ports)}")
# The worker outlives its shutdown grace, and runs as the image's non-root user, read-only.
grace = float(kinds[("ConfigMap", "receipt-worker")]["data"]["SHUTDOWN_GRACE_SECONDS"])
for d in docs:
    if d["kind"] not in ("Deployment", "Job"):
        continue
    pod = d["spec"]["template"]["spec"]
    name = d["metadata"]["name"]
    if d["kind"] == "Deployment" and pod.get("terminationGracePeriodSeconds", 30) <= grace:
        sys.exit(f"check-manifests: {name}: terminationGracePeriodSeconds is not above SHUTDOWN_GRACE_SECONDS ({grace:g})")
    for c in pod["containers"]:
        sc = c.get("securityContext", {})
        if not (pod["securityContext"].get("runAsNonRoot") and sc.get("readOnlyRootFilesystem") and sc.get("allowPrivilegeEscalation") is False):
            sys.exit(f"check-manifests: {name}/{c['name']}: not non-root with a read-only root filesystem")
print(f"check-manifests: kustomization lists all {len(files)} manifests; the PrometheusRule is rules.yml; "
      f"the ServiceMonitor meets its Services; grace and security contexts hold")
EOF
python3 -c 'import sys, yaml; yaml.safe_dump(yaml.safe_load(open(sys.argv[1]))["spec"], open(sys.argv[2], "w"))' \
    "$K8S/prometheusrule.yaml" "$WORK/rules.yml"
promtool check rules "$WORK/rules.yml" >"$WORK/promtool.out" 2>&1 || { cat "$WORK/promtool.out"; fail "promtool check rules"; }
say "promtool: $(grep -o 'SUCCESS: [0-9]* rules found' "$WORK/promtool.out")"

# ---- 3. systemd ------------------------------------------------------------------------------
root=$WORK/root
mkdir -p "$root/etc/systemd/system" "$root/usr/local/bin" "$root/usr/lib/systemd"
cp -r /usr/lib/systemd/system "$root/usr/lib/systemd/"
cp deploy/systemd/*.service "$root/etc/systemd/system/"
printf '#!/bin/sh\n' > "$root/usr/local/bin/receipt-worker"
chmod 0755 "$root/usr/local/bin/receipt-worker"
units=()
for f in deploy/systemd/*.service; do
    unit=$(basename "$f")
    [[ $unit == *@.service ]] && unit=${unit%@.service}@9464.service   # an instance: its metrics port
    units+=("$unit")
done
if ! systemd-analyze verify --root="$root" "${units[@]}" >"$WORK/verify.out" 2>&1 || [ -s "$WORK/verify.out" ]; then
    cat "$WORK/verify.out"
    fail "systemd-analyze verify"
fi
say "systemd-analyze verify: ${units[*]}: no warnings"
say "all held"
