package amd

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs/pcisysfstest"
	"github.com/gpustack/gpustack-operator/providers/smitool/smitooltest"
)

func TestDetect(t *testing.T) {
	bus := map[string]map[string]string{
		"0000:0c:00.0": pcisysfstest.Function("0x1002", "0x74a1", "0x038000"),
		"0000:1b:00.0": pcisysfstest.Function("0x1002", "0x74a1", "0x038000"),
	}
	mi300x := func(index int32, uuid string) providers.Device {
		return providers.Device{Manufacturer: "amd", Product: "AMD Instinct MI300X", UUID: uuid, Index: index,
			MemoryMiB: 196592, Family: "gfx942", DriverVersion: "6.8.5"}
	}
	cases := map[string]struct {
		reason  string
		answers smitooltest.Runner
		want    []providers.Device
		err     string
	}{
		"Report": {
			reason:  "rocm-smi's report describes both cards, matched to the bus by address.",
			answers: smitooltest.Runner{Command.String(): {Stdout: smitooltest.Fixture(t, "rocm-smi.json")}},
			want:    []providers.Device{mi300x(0, "0x18c16c2b04b0a3e2"), mi300x(1, "0x4b9d3c7f13f1a6c1")},
		},
		"Garbage": {
			reason:  "A report that is not JSON leaves both cards unhealthy and says why.",
			answers: smitooltest.Runner{Command.String(): {Stdout: "Segmentation fault"}},
			want: []providers.Device{
				{Manufacturer: "amd", Product: "AMD 74a1", UUID: "amd-pci-0000:0c:00.0", Index: 0, Unhealthy: true},
				{Manufacturer: "amd", Product: "AMD 74a1", UUID: "amd-pci-0000:1b:00.0", Index: 1, Unhealthy: true},
			},
			err: "cannot parse",
		},
		"ToolFails": {
			reason:  "A failing tool leaves the cards unhealthy with its error.",
			answers: smitooltest.Runner{Command.String(): {Err: errors.New("rocm-smi: exit status 1: amdgpu driver not loaded")}},
			want: []providers.Device{
				{Manufacturer: "amd", Product: "AMD 74a1", UUID: "amd-pci-0000:0c:00.0", Index: 0, Unhealthy: true},
				{Manufacturer: "amd", Product: "AMD 74a1", UUID: "amd-pci-0000:1b:00.0", Index: 1, Unhealthy: true},
			},
			err: "amdgpu driver not loaded",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := smitooltest.Devices(New(pcisysfstest.Tree(t, bus), tc.answers))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nDetect(...): -want, +got:\n%s", tc.reason, diff)
			}
			if tc.err == "" && err != "" || !strings.Contains(err, tc.err) {
				t.Errorf("%s\nDetect(...): error %q, want one containing %q", tc.reason, err, tc.err)
			}
		})
	}
}
