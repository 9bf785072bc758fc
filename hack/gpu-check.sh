#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and its driver: build the operator and print what the device agent would
# publish for this node (the NodeFeature labels and the Devices spec), through the real NVML. No cluster needed;
# it finishes in well under five minutes once Go modules are downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS=-buildvcs=false CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
go build -o bin/gpustack-operator ./cmd/gpustack-operator
exec bin/gpustack-operator device-manager --print "$@"
