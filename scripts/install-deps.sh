#!/usr/bin/env bash
# Installs every Debian package Phalanx's build, tests and benchmarks need.
# Idempotent and non-interactive: if everything is already installed it does nothing
# (no network); otherwise it runs `apt-get update` once and installs what is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config make
  # gRPC + protobuf (Debian's gRPC CMake config needs protobuf-compiler-grpc)
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  # HTTP client (cpprestsdk), server side (Boost.Beast/Asio), TLS
  libcpprest-dev libboost-dev libboost-system-dev libssl-dev
  # JSON, YAML, logging, CLI
  nlohmann-json3-dev libsimdjson-dev libspdlog-dev libfmt-dev libyaml-cpp-dev libcli11-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  # chart checks and tooling
  unzip curl ca-certificates python3
)
# `install-deps.sh --fuzz` (make fuzz): clang++ with libFuzzer and the sanitizer runtimes.
if [ "${1:-}" = "--fuzz" ]; then
  PACKAGES+=(clang)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
