package hygon

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs/pcisysfstest"
	"github.com/gpustack/gpustack-operator/providers/smitool/smitooltest"
)

func TestDetect(t *testing.T) {
	bus := map[string]map[string]string{"0000:9f:00.0": pcisysfstest.Function("0x1d94", "0x6210", "0x120000")}
	cases := map[string]struct {
		reason  string
		answers smitooltest.Runner
		want    []providers.Device
		err     string
	}{
		"Report": {
			reason:  "hy-smi's report, in rocm-smi's shape with its own key spellings, describes the DCU.",
			answers: smitooltest.Runner{Command.String(): {Stdout: smitooltest.Fixture(t, "hy-smi.json")}},
			want: []providers.Device{{Manufacturer: "hygon", Product: "K100_AI", UUID: "0x0b8f2c1d55a3e701",
				MemoryMiB: 65520, DriverVersion: "6.3.8-V1.5.2"}},
		},
		"NotInstalled": {
			reason:  "Without hy-smi the DCU on the bus is still reported, unhealthy.",
			answers: smitooltest.Runner{},
			want:    []providers.Device{{Manufacturer: "hygon", Product: "Hygon 6210", UUID: "hygon-pci-0000:9f:00.0", Unhealthy: true}},
			err:     "not installed",
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
