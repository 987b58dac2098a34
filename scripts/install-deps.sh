#!/usr/bin/env bash
# Installs every Debian and npm dependency trainwatch needs on a fresh Debian 12 machine.
# Idempotent: packages already present are not reinstalled; safe to run before every build.
set -euo pipefail

cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libboost-dev librocksdb-dev libzstd-dev liblz4-dev libre2-dev libssl-dev
  libcurl4-openssl-dev nlohmann-json3-dev libsimdjson-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev llvm-14 clang-format
  pybind11-dev python3-dev python3-numpy python3-pytest python3-grpcio python3-protobuf python3-websocket python3-jsonschema
  python3-torch python3-sklearn python3-optuna python3-skorch python3-pip python3-setuptools python3-wheel python3-venv
  curl procps prometheus-alertmanager chromium poppler-utils python3-influxdb influxdb influxdb-client prometheus libsnappy-dev
  nats-server libnats-dev
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Optional peers used only by benchmarks (bench/), installed on request.
if [ "${TRAINWATCH_BENCH_DEPS:-0}" = "1" ]; then
  if ! command -v influxd >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends influxdb influxdb-client
  fi
fi

# Web dashboard dependencies, from the committed lock file.
if [ -f web/package-lock.json ] && [ ! -d web/node_modules ]; then
  (cd web && npm ci --no-audit --no-fund)
fi

# The S3-protocol server (s3rver) the blob store's integration tests start (tests/s3rver).
if [ -f tests/s3rver/package-lock.json ] && [ ! -d tests/s3rver/node_modules ]; then
  (cd tests/s3rver && npm ci --no-audit --no-fund)
fi
