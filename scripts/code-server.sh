#!/usr/bin/env bash
# Install code-server (VS Code 1.99 in a browser) for tests/test_vscode.py, once: it is
# cached in $JAXMAGIC_CODE_SERVER_DIR (default ~/.cache/jaxmagic/code-server) and later
# runs return at once. Not part of `make test`: the first install compiles native
# modules for minutes. Debian only (apt-get); run as root.
#
# @vscode/ripgrep downloads `rg` from GitHub at install; here only the package registries
# are reachable, so its download cache is seeded with Debian's `rg` first.
set -euo pipefail
VERSION=4.99.4
DIR="${JAXMAGIC_CODE_SERVER_DIR:-$HOME/.cache/jaxmagic/code-server}"
BIN="$DIR/node_modules/.bin/code-server"
[ -x "$BIN" ] && "$BIN" --version 2>/dev/null | grep -q "^$VERSION" && { echo "$BIN"; exit 0; }

need=()
for p in build-essential pkg-config libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev \
         ripgrep nodejs npm; do
  dpkg -s "$p" >/dev/null 2>&1 || command -v "${p%js}" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# the ripgrep build @vscode/ripgrep would fetch, for each 1.x release it may resolve to
tmp="${TMPDIR:-/tmp}"
rg_tar=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz
for v in $(npm view '@vscode/ripgrep@^1.15' version 2>/dev/null | awk '{print $NF}' | tr -d "'"); do
  mkdir -p "$tmp/vscode-ripgrep-cache-$v"
  [ -e "$tmp/vscode-ripgrep-cache-$v/$rg_tar" ] || \
    tar czf "$tmp/vscode-ripgrep-cache-$v/$rg_tar" -C "$(dirname "$(command -v rg)")" rg
done

mkdir -p "$DIR"
cd "$DIR"
[ -e package.json ] || echo '{"private": true}' > package.json
npm_config_yes=true npm install --unsafe-perm --no-audit --no-fund "code-server@$VERSION" >&2
"$BIN" --version >&2
echo "$BIN"
