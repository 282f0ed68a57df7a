#!/usr/bin/env bash
# The production-topology lane: a Temporal server on PostgreSQL built from the Go module proxy,
# two settle workers, the production-tagged tests (scripts/production-lane.ts). Needs Go 1.22+
# the first time (the server builds in minutes, then is cached in .settle/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=v1.29.1
mkdir -p .settle/bin
for target in server tools/sql; do
  bin=.settle/bin/$(basename "$target")
  if [ ! -x "$bin" ]; then
    echo "== go install go.temporal.io/server/cmd/$target@$VERSION" >&2
    GOBIN="$PWD/.settle/bin" CGO_ENABLED=0 go install "go.temporal.io/server/cmd/$target@$VERSION"
  fi
done
export TEMPORAL_SERVER_MODULE_DIR="$(go env GOMODCACHE)/go.temporal.io/server@$VERSION"
exec node --import tsx scripts/production-lane.ts "$@"
