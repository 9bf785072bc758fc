package nvidia

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/providers"
)

// a10gServer is the walkthrough's A10G node as NVML would report it: driver 580.159.03, CUDA 13.0.
func a10gServer(t *testing.T) *server.Server {
	t.Helper()
	s, err := server.New(
		server.WithGPUs(gpus.Config{Name: "NVIDIA A10G", Architecture: nvml.DEVICE_ARCH_AMPERE, Brand: nvml.BRAND_NVIDIA,
			MemoryMB: 24576, CudaMajor: 8, CudaMinor: 6}),
		server.WithDriverVersion("580.159.03"), server.WithNVMLVersion("13.580.159.03"), server.WithCUDADriverVersion(13000),
	)
	if err != nil {
		t.Fatal(err)
	}
	// The mock leaves the core count out; a real A10G reports 10240 CUDA cores.
	s.Devices[0].(*server.Device).GetNumGpuCoresFunc = func() (int, nvml.Return) { return 10240, nvml.SUCCESS }
	return s
}

// TestSeedNodeLabels turns the mocked A10G into the labels the seed's Node shows.
func TestSeedNodeLabels(t *testing.T) {
	devices, err := New(a10gServer(t)).Detect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"feature.gpustack.ai/acceleratable":                        "true",
		"acceleratable.feature.gpustack.ai/nvidia":                 "true",
		"acceleratable.feature.gpustack.ai/nvidia-a10g":            "true",
		"acceleratable.feature.gpustack.ai/nvidia-a10g.count":      "1",
		"acceleratable.feature.gpustack.ai/nvidia-a10g.memory":     "24Gi",
		"acceleratable.feature.gpustack.ai/nvidia-a10g.cores":      "10240",
		"acceleratable.feature.gpustack.ai/nvidia-a10g.family":     "Ampere",
		"acceleratable.feature.gpustack.ai/nvidia-a10g.product":    "NVIDIA-A10G",
		"acceleratable.feature.gpustack.ai/nvidia-a10g.comcap":     "8.6",
		"acceleratable.feature.gpustack.ai/nvidia.driver-version":  "580.159.03",
		"acceleratable.feature.gpustack.ai/nvidia.runtime-version": "13.0",
	}
	if diff := cmp.Diff(want, providers.NodeLabels(devices)); diff != "" {
		t.Errorf("the seed's node-a10g labels\nLabels(Detect(...)): -want, +got:\n%s", diff)
	}
}

func TestDetect(t *testing.T) {
	type card struct {
		Product, Family, ComputeCapability, Driver, Runtime string
		MemoryMiB                                           int64
		Unhealthy                                           bool
		Partitions                                          string
	}
	type want struct {
		cards []card
		err   string
	}
	h100MIG := func(*testing.T) nvml.Interface {
		s := dgxh100.New()
		s.Devices[0].(*server.Device).MigMode = nvml.DEVICE_MIG_ENABLE
		s.Devices = s.Devices[:2]
		return s
	}
	cases := map[string]struct {
		reason string
		lib    func(*testing.T) nvml.Interface
		want   want
	}{
		"DGXA100": {
			reason: "Eight A100s, with the driver's and CUDA's versions.",
			lib:    func(*testing.T) nvml.Interface { return dgxa100.New() },
			want: want{cards: repeat(8, card{Product: "Mock NVIDIA A100-SXM4-40GB", Family: "Ampere", ComputeCapability: "8.0",
				Driver: "550.54.15", Runtime: "12.4", MemoryMiB: 40960})},
		},
		"MIG": {
			reason: "A card in MIG mode reports its profiles without the +me variants; the other card none.",
			lib:    h100MIG,
			want: want{cards: []card{
				{Product: "NVIDIA H100 80GB HBM3", Family: "Hopper", ComputeCapability: "9.0", Driver: "550.54.15", Runtime: "12.4",
					MemoryMiB: 81920, Partitions: "1g.10gb=7 1g.20gb=4 2g.20gb=3 3g.40gb=2 4g.40gb=1 7g.80gb=1"},
				{Product: "NVIDIA H100 80GB HBM3", Family: "Hopper", ComputeCapability: "9.0", Driver: "550.54.15", Runtime: "12.4",
					MemoryMiB: 81920},
			}},
		},
		"NoDriver": {
			reason: "Without a driver nothing is detected and the error says why.",
			lib: func(*testing.T) nvml.Interface {
				s := dgxa100.New()
				s.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
				s.ErrorStringFunc = func(nvml.Return) string { return "NVML Shared Library Not Found" }
				return s
			},
			want: want{err: "cannot initialise NVML: NVML Shared Library Not Found"},
		},
		"CardGone": {
			reason: "A card NVML cannot name is reported unhealthy; the others are healthy.",
			lib: func(*testing.T) nvml.Interface {
				s := dgxa100.New()
				s.Devices = s.Devices[:2]
				s.Devices[1].(*server.Device).GetNameFunc = func() (string, nvml.Return) { return "", nvml.ERROR_GPU_IS_LOST }
				s.ErrorStringFunc = func(nvml.Return) string { return "GPU is lost" }
				return s
			},
			want: want{
				cards: []card{
					{Product: "Mock NVIDIA A100-SXM4-40GB", Family: "Ampere", ComputeCapability: "8.0", Driver: "550.54.15", Runtime: "12.4", MemoryMiB: 40960},
					{Family: "Ampere", ComputeCapability: "8.0", Driver: "550.54.15", Runtime: "12.4", MemoryMiB: 40960, Unhealthy: true},
				},
				err: "1 of 2 cards are unhealthy: [card 1: [name: GPU is lost]]",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			devices, err := New(tc.lib(t)).Detect(context.Background())
			got := want{}
			if err != nil {
				got.err = err.Error()
			}
			for _, d := range devices {
				var parts []string
				for _, p := range d.Partitions {
					parts = append(parts, p.Name+"="+itoa(p.Count))
				}
				got.cards = append(got.cards, card{Product: d.Product, Family: d.Family, ComputeCapability: d.ComputeCapability,
					Driver: d.DriverVersion, Runtime: d.RuntimeVersion, MemoryMiB: d.MemoryMiB, Unhealthy: d.Unhealthy,
					Partitions: strings.Join(parts, " ")})
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nDetect(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func repeat[T any](n int, v T) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
