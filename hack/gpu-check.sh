#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and its driver: print what the device manager would publish for this node (the
# NodeFeature labels and the Devices spec), read through the real NVML. No cluster needed.
#
# The operator binary is, in order: $GPU_CHECK_BINARY; bin/gpu-check/gpustack-operator.gz, which
# `make gpu-check-bundle` writes here for a machine without Go modules (compressed, it fits a device run's
# carried files: run `GPU_CHECK_BINARY= hack/gpu-check.sh` there with bin/gpu-check carried); else a fresh build.
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${GPU_CHECK_BINARY:-}
if [[ -z $binary && -f bin/gpu-check/gpustack-operator.gz ]]; then
	binary=$(mktemp -d)/gpustack-operator
	gunzip -c bin/gpu-check/gpustack-operator.gz >"$binary"
	chmod +x "$binary"
fi
if [[ -z $binary ]]; then
	export GOFLAGS=-buildvcs=false CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations"
	binary=bin/gpustack-operator
	go build -o "$binary" ./cmd/gpustack-operator
fi
if command -v nvidia-smi >/dev/null; then
	nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
fi
exec "$binary" device-manager --print "$@"
