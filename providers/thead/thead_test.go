package thead

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs/pcisysfstest"
	"github.com/gpustack/gpustack-operator/providers/smitool"
	"github.com/gpustack/gpustack-operator/providers/smitool/smitooltest"
)

// query is the command line the backend runs.
const query = Tool + " --query-gpu=index,uuid,name,memory.total,driver_version,pci.bus_id --format=csv,noheader,nounits"

func TestDetect(t *testing.T) {
	bus := map[string]map[string]string{"0000:4f:00.0": pcisysfstest.Function("0x1ded", "0x8020", "0x120000")}
	cases := map[string]struct {
		reason  string
		answers smitooltest.Runner
		want    []providers.Device
		err     string
	}{
		"Report": {
			reason:  "The query's CSV describes every card, matched to the bus by address.",
			answers: smitooltest.Runner{query: {Stdout: smitooltest.Fixture(t, "ppu-smi.csv")}},
			want: []providers.Device{
				{Manufacturer: "thead", Product: "PPU-ZW810E", UUID: "PPU-9c2e7f1a-0b3d-4e5f-8a6b-1c2d3e4f5a6b", MemoryMiB: 98304, DriverVersion: "1.5.1"},
			},
		},
		"Garbage": {
			reason:  "Output that is not the queried CSV leaves the cards unhealthy and says which line is wrong.",
			answers: smitooltest.Runner{query: {Stdout: "Failed to initialize: driver/library version mismatch\n"}},
			want: []providers.Device{
				{Manufacturer: "thead", Product: "T-Head 8020", UUID: "thead-pci-0000:4f:00.0", Unhealthy: true},
			},
			err: "line 1",
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

func FuzzParse(f *testing.F) {
	f.Add(smitooltest.Fixture(f, "ppu-smi.csv"))
	f.Add("0,,,,,\n-1, x, y, 1e309, z, w\n")
	f.Fuzz(func(t *testing.T, s string) {
		cards, err := smitool.QueryLikeNvidiaSMI(Tool)(context.Background(), smitooltest.Runner{query: {Stdout: s}})
		if err != nil {
			return
		}
		for _, c := range cards {
			if c.MemoryMiB < 0 || c.Index < 0 {
				t.Fatalf("card %+v", c)
			}
		}
	})
}
