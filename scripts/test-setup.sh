#!/usr/bin/env bash
# Install everything the test suite needs on a fresh Debian/Ubuntu machine (root or sudo), idempotently:
# Debian's Nsight Systems (for .nsys-rep/.qdrep export tests) and the Python test extras.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nsys >/dev/null 2>&1; then
  bash scripts/install-nsight-systems.sh
fi
python3 -m pip install --quiet --disable-pip-version-check -e ".[test]"
