// Package nvidia is the NVIDIA backend of the device provider, on NVML through go-nvml: every card's name,
// UUID, index, memory, cores, architecture and compute capability, the driver and CUDA versions, and a card's
// MIG profiles while it is in MIG mode.
package nvidia

import (
	"context"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpustack/gpustack-operator/providers"
)

// Provider detects NVIDIA cards through an NVML library.
type Provider struct {
	lib nvml.Interface
}

// New returns the backend over an NVML library: nvml.New() on a node, a go-nvml mock server in tests.
func New(lib nvml.Interface) *Provider { return &Provider{lib: lib} }

// Name names the backend.
func (p *Provider) Name() string { return "nvidia" }

// Detect returns the node's cards. Without a usable driver it returns no card and an error; a card NVML
// cannot describe is reported unhealthy with what could be read.
func (p *Provider) Detect(context.Context) (devices []providers.Device, err error) {
	if ret := call(p.lib.Init); ret != nvml.SUCCESS {
		return nil, errors.Errorf("cannot initialise NVML: %s", errorString(p.lib, ret))
	}
	defer func() { _ = call(p.lib.Shutdown) }()
	driver, _ := get(p.lib.SystemGetDriverVersion)
	cuda, _ := get(p.lib.SystemGetCudaDriverVersion)
	runtime := ""
	if cuda > 0 {
		runtime = fmt.Sprintf("%d.%d", cuda/1000, cuda%1000/10)
	}
	count, ret := get(p.lib.DeviceGetCount)
	if ret != nvml.SUCCESS {
		return nil, errors.Errorf("cannot count devices: %s", errorString(p.lib, ret))
	}
	var problems []string
	for i := 0; i < count; i++ {
		d, problem := p.device(i)
		d.DriverVersion, d.RuntimeVersion = driver, runtime
		if problem != "" {
			problems = append(problems, problem)
		}
		devices = append(devices, d)
	}
	if len(problems) > 0 {
		return devices, errors.Errorf("%d of %d cards are unhealthy: %v", len(problems), count, problems)
	}
	return devices, nil
}

// device reads one card; what it cannot read marks the card unhealthy and is reported.
func (p *Provider) device(index int) (providers.Device, string) {
	d := providers.Device{Manufacturer: "nvidia", Index: int32(index)}
	h, ret := getArg(p.lib.DeviceGetHandleByIndex, index)
	if ret != nvml.SUCCESS {
		d.Unhealthy, d.UUID = true, fmt.Sprintf("GPU-unknown-%d", index)
		return d, fmt.Sprintf("card %d: %s", index, errorString(p.lib, ret))
	}
	var problems []string
	if d.UUID, ret = get(h.GetUUID); ret != nvml.SUCCESS {
		d.UUID = fmt.Sprintf("GPU-unknown-%d", index)
		problems = append(problems, "uuid: "+errorString(p.lib, ret))
	}
	if d.Product, ret = get(h.GetName); ret != nvml.SUCCESS {
		problems = append(problems, "name: "+errorString(p.lib, ret))
	}
	if mem, ret := get(h.GetMemoryInfo); ret == nvml.SUCCESS {
		d.MemoryMiB = int64(mem.Total >> 20)
	} else {
		problems = append(problems, "memory: "+errorString(p.lib, ret))
	}
	if cores, ret := get(h.GetNumGpuCores); ret == nvml.SUCCESS {
		d.Cores = int64(cores)
	}
	if major, minor, ret := get2(h.GetCudaComputeCapability); ret == nvml.SUCCESS {
		d.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
	}
	if arch, ret := get(h.GetArchitecture); ret == nvml.SUCCESS {
		d.Family = family(arch)
	}
	if current, _, ret := get2(h.GetMigMode); ret == nvml.SUCCESS && current == nvml.DEVICE_MIG_ENABLE {
		d.Partitions = profiles(h, d.Product)
	}
	if len(problems) > 0 {
		d.Unhealthy = true
		return d, fmt.Sprintf("card %d: %v", index, problems)
	}
	return d, ""
}

// migProfiles are the GPU-instance profiles offered; the media-extension (+me) variants are left out.
var migProfiles = []int{
	nvml.GPU_INSTANCE_PROFILE_1_SLICE, nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2, nvml.GPU_INSTANCE_PROFILE_2_SLICE,
	nvml.GPU_INSTANCE_PROFILE_3_SLICE, nvml.GPU_INSTANCE_PROFILE_4_SLICE, nvml.GPU_INSTANCE_PROFILE_6_SLICE,
	nvml.GPU_INSTANCE_PROFILE_7_SLICE, nvml.GPU_INSTANCE_PROFILE_8_SLICE,
}

// profiles lists a MIG card's profiles, named <slices>g.<memory>gb as nvidia-smi names them, with the number
// of instances one empty card holds and their legal placements. Profiles without a legal placement are left out.
// NVML reports a little less memory than a profile's name says (1g.5gb has 4864 MiB), so a known product's
// profiles take the names of the product table; an unknown product's are named from the memory, rounded.
func profiles(h nvml.Device, product string) []providers.Partition {
	var out []providers.Partition
	for _, id := range migProfiles {
		info, ret := getArg(h.GetGpuInstanceProfileInfo, id)
		if ret != nvml.SUCCESS || info.InstanceCount == 0 {
			continue
		}
		placements, ret := getArg(h.GetGpuInstancePossiblePlacements, &info)
		if ret != nvml.SUCCESS || len(placements) == 0 {
			continue
		}
		starts := make([]int32, len(placements))
		for i, pl := range placements {
			starts[i] = int32(pl.Start)
		}
		size := int32(placements[0].Size)
		out = append(out, providers.Partition{
			Name: profileName(info, product), MemoryMiB: int64(info.MemorySizeMB),
			ComputeSlices: int32(info.SliceCount), MemorySlices: size, Count: int32(info.InstanceCount), Placements: starts,
		})
	}
	return out
}

// family names an NVML architecture as the labels do (Ampere).
func family(a nvml.DeviceArchitecture) string {
	switch a {
	case nvml.DEVICE_ARCH_KEPLER:
		return "Kepler"
	case nvml.DEVICE_ARCH_MAXWELL:
		return "Maxwell"
	case nvml.DEVICE_ARCH_PASCAL:
		return "Pascal"
	case nvml.DEVICE_ARCH_VOLTA:
		return "Volta"
	case nvml.DEVICE_ARCH_TURING:
		return "Turing"
	case nvml.DEVICE_ARCH_AMPERE:
		return "Ampere"
	case nvml.DEVICE_ARCH_ADA:
		return "Ada-Lovelace"
	case nvml.DEVICE_ARCH_HOPPER:
		return "Hopper"
	case nvml.DEVICE_ARCH_BLACKWELL:
		return "Blackwell"
	}
	return ""
}

// Architecture is the NVML architecture whose family name the labels give (Ampere), DEVICE_ARCH_UNKNOWN for
// any other name: family read backwards, for what writes a card as NVML reports it (a simulated driver).
func Architecture(name string) nvml.DeviceArchitecture {
	for a := nvml.DeviceArchitecture(nvml.DEVICE_ARCH_KEPLER); a <= nvml.DEVICE_ARCH_BLACKWELL; a++ {
		if name != "" && family(a) == name {
			return a
		}
	}
	return nvml.DEVICE_ARCH_UNKNOWN
}

// The helpers below call NVML and turn a panic into an error return: a mock or a broken driver that does
// not implement a call must not bring the agent down.

func call(f func() nvml.Return) (ret nvml.Return) {
	defer func() {
		if recover() != nil {
			ret = nvml.ERROR_NOT_SUPPORTED
		}
	}()
	return f()
}

func get[T any](f func() (T, nvml.Return)) (v T, ret nvml.Return) {
	defer func() {
		if recover() != nil {
			ret = nvml.ERROR_NOT_SUPPORTED
		}
	}()
	return f()
}

func get2[T, U any](f func() (T, U, nvml.Return)) (v T, u U, ret nvml.Return) {
	defer func() {
		if recover() != nil {
			ret = nvml.ERROR_NOT_SUPPORTED
		}
	}()
	return f()
}

func getArg[A, T any](f func(A) (T, nvml.Return), a A) (v T, ret nvml.Return) {
	defer func() {
		if recover() != nil {
			ret = nvml.ERROR_NOT_SUPPORTED
		}
	}()
	return f(a)
}

func errorString(lib nvml.Interface, ret nvml.Return) (s string) {
	defer func() {
		if recover() != nil {
			s = fmt.Sprintf("NVML error %d", int(ret))
		}
	}()
	return lib.ErrorString(ret)
}
