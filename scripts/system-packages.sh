#!/usr/bin/env bash
# Install the Debian packages the tests use, once: chromium (browser tests), graphviz
# (the system `dot` renderer) and fonts. Skips whatever is already there.
set -euo pipefail
need=()
command -v chromium >/dev/null || need+=(chromium)
command -v dot >/dev/null || need+=(graphviz)
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "missing system packages: ${need[*]} (run as root, or: sudo apt-get install -y ${need[*]})" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
