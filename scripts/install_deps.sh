#!/usr/bin/env bash
# Installs the Debian packages the build needs (bookworm names). Skips apt when all are present.
set -euo pipefail
pkgs=(cmake ninja-build g++ clang pkg-config python3 python3-pip python3-venv unzip curl
      libhwy-dev libpcre2-dev nlohmann-json3-dev libboost-dev libcpp-httplib-dev libcli11-dev libfmt-dev
      libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev libhiredis-dev
      redis-server)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all Debian packages present"
  exit 0
fi
echo "deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
