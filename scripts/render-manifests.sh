#!/usr/bin/env bash
# Regenerates the plain-kubectl manifests from the chart with default values:
#   manifests/install.yaml         Namespace phalanx-system + CRDs + everything the chart renders
#   manifests/priorityclasses.yaml the four PriorityClass tiers alone
# tests/chart checks both are in sync with the chart (run this after any chart change).
#
#   scripts/render-manifests.sh [--check]     HELM=<path> overrides the helm binary
# --check: render to a temp dir and exit 1 (printing a diff) if the committed files differ.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
helm="${HELM:-$repo/build/tools/helm/helm}"
if [ ! -x "$helm" ]; then
  "$repo/scripts/fetch-helm.sh" "$(dirname "$helm")" >&2
fi

# The kube-scheduler image tag follows the cluster's minor version; the static manifest is
# rendered for this one (edit the image in install.yaml, or use helm, for other versions).
KUBE_VERSION="1.32.0"
NAMESPACE="phalanx-system"
RELEASE="phalanx"

out="$repo/manifests"
check=0
if [ "${1:-}" = "--check" ]; then
  check=1
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"

{
  cat <<HDR
# Phalanx install manifest, rendered by scripts/render-manifests.sh from helm/phalanx with default
# values (release "$RELEASE", namespace $NAMESPACE, Kubernetes $KUBE_VERSION). Do not edit by hand.
#   kubectl apply --server-side -f manifests/install.yaml
# The kube-scheduler image must match your cluster's minor version: edit its tag below or install
# with helm (see docs/install.md).
---
apiVersion: v1
kind: Namespace
metadata:
  name: $NAMESPACE
  labels:
    app.kubernetes.io/part-of: phalanx
HDR
  # --no-hooks: the CRD upgrade hook needs helm; kubectl users upgrade the CRDs with
  # `kubectl apply --server-side --force-conflicts -f manifests/crds/` (docs/install.md).
  "$helm" template "$RELEASE" "$repo/helm/phalanx" --namespace "$NAMESPACE" \
    --kube-version "$KUBE_VERSION" --include-crds --no-hooks
} >"$out/install.yaml"

{
  echo "# Phalanx PriorityClass tiers (docs/architecture.md §2.1), rendered by scripts/render-manifests.sh. Do not edit."
  "$helm" template "$RELEASE" "$repo/helm/phalanx" --namespace "$NAMESPACE" \
    --kube-version "$KUBE_VERSION" --show-only templates/priorityclasses.yaml
} >"$out/priorityclasses.yaml"

if [ "$check" = 1 ]; then
  rc=0
  for f in install.yaml priorityclasses.yaml; do
    if ! diff -u "$repo/manifests/$f" "$out/$f"; then
      echo "render-manifests: manifests/$f is out of date; run scripts/render-manifests.sh" >&2
      rc=1
    fi
  done
  exit $rc
fi
echo "render-manifests: wrote manifests/install.yaml and manifests/priorityclasses.yaml"
