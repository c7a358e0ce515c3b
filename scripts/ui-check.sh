#!/usr/bin/env bash
# Shows that the committed web UI bundle (ui/dist) and the generated
# TypeScript client (ui/web/src/gen) are exactly what the sources build:
# a temporary copy of ui/web gets `npm ci` from the lockfile, regenerates
# the client with the repository's pinned buf, builds, and both outputs are
# compared byte for byte with what is committed.
#
# Needs Node (the version in ui/web/.nvmrc) and npm's registry. Where the
# registry cannot be reached the check says so loudly and skips (exit 0),
# so an offline `make test` still passes; UI_CHECK_STRICT=1 makes that a
# failure instead.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
skip() {
  echo "************************************************************" >&2
  echo "ui-check SKIPPED: $*" >&2
  echo "the committed ui/dist was NOT verified against ui/web sources" >&2
  echo "************************************************************" >&2
  [ "${UI_CHECK_STRICT:-}" = 1 ] && exit 1
  exit 0
}
command -v node >/dev/null 2>&1 || skip "node is not installed"
command -v npm >/dev/null 2>&1 || skip "npm is not installed"
want=$(cat ui/web/.nvmrc)
have=$(node --version | sed 's/^v//')
if [ "${want%%.*}" != "${have%%.*}" ]; then
  skip "node $have is not the pinned major version of ui/web/.nvmrc ($want)"
fi
[ "$want" = "$have" ] || echo "note: node $have, ui/web/.nvmrc pins $want (same major version)" >&2
timeout 20 npm ping >/dev/null 2>&1 || skip "npm's registry is unreachable"

work=$(mktemp -d -t ledgerd-ui-check-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ui"
tar -C ui --exclude=web/node_modules -cf - web | tar -C "$work/ui" -xf -
(cd "$work/ui/web" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)

# The client, generated with a copy of the UI's buf template whose plugin
# and output point into the temporary copy.
sed -e "s#ui/web/node_modules/.bin/protoc-gen-es#$work/ui/web/node_modules/.bin/protoc-gen-es#" \
    -e "s#out: ui/web/src/gen#out: $work/gen#" ui/web/buf.gen.ui.yaml >"$work/buf.gen.yaml"
go tool -modfile=tools/go.mod buf generate --template "$work/buf.gen.yaml"
if ! diff -r "$work/gen" ui/web/src/gen >"$work/gen.diff"; then
  head -40 "$work/gen.diff"
  echo "ui-check: ui/web/src/gen is stale: run make ui-build and commit it" >&2
  exit 1
fi

(cd "$work/ui/web" && npx vite build --logLevel error)
if ! diff -r "$work/ui/dist" ui/dist >"$work/dist.diff"; then
  head -40 "$work/dist.diff"
  echo "ui-check: ui/dist differs from a clean build of ui/web: run make ui-build and commit ui/dist" >&2
  exit 1
fi
echo "ui-check: ui/dist and ui/web/src/gen are reproducible from ui/web (node $have, npm $(npm --version))"
