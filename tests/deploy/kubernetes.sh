#!/usr/bin/env bash
# kubernetes.sh SRC BUILDDIR — contrib/kubernetes checked against the Kubernetes API
# schemas: npm installs kubernetes-models and js-yaml (pinned) into
# BUILDDIR/deploy-npm once, then k8s-validate.js validates every manifest.
# Exit 77 (skip) without node/npm or when the npm registry cannot be reached.
set -euo pipefail
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd)
here=$(dirname "$(readlink -f "$0")")
for t in node npm; do
	command -v "$t" >/dev/null || { echo "SKIP: $t not installed (the Kubernetes schema check runs on node)"; exit 77; }
done
npmdir=$build/deploy-npm
if [[ ! -f $npmdir/node_modules/kubernetes-models/package.json || ! -f $npmdir/node_modules/js-yaml/package.json ]]; then
	mkdir -p "$npmdir"
	echo '{"private": true}' >"$npmdir/package.json"
	(cd "$npmdir" && timeout 300 npm install --no-audit --no-fund --loglevel=error \
		kubernetes-models@5.1.0 js-yaml@4.1.0) ||
		{ echo "SKIP: npm install kubernetes-models failed (registry unreachable?)"; exit 77; }
fi
node "$here/k8s-validate.js" "$npmdir/node_modules" "$src/contrib/kubernetes"
