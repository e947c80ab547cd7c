#!/usr/bin/env bash
# Install Debian's Nsight Systems CLI (`nsys`, 2022.4 on bookworm) so .nsys-rep/.qdrep reports of
# 2022.4 and older can be exported to SQLite. Idempotent; non-interactive; needs root (CI runs as
# root). Newer reports need a newer nsys from NVIDIA: pass it with `advisor --nsys PATH`.
set -euo pipefail

if command -v nsys >/dev/null 2>&1; then
  echo "nsys already installed: $(nsys --version)"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-nsight-systems.sh: needs root (apt-get); run it with sudo" >&2
  exit 2
fi

# nsight-systems lives in Debian's non-free (and contrib) components, not enabled by default.
src=/etc/apt/sources.list.d/debian-nonfree.sources
if ! grep -rqs "non-free" /etc/apt/sources.list /etc/apt/sources.list.d/; then
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
  cat > "$src" <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: ${codename}
Components: non-free contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -q --no-install-recommends nsight-systems >/dev/null
nsys --version
