package providers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConfigureGroupIDWithMemory(t *testing.T) {
	t4 := func(uuid string, index int32, mib int64) Device {
		return Device{Manufacturer: "nvidia", Product: "Tesla T4", UUID: uuid, Index: index, MemoryMiB: mib}
	}
	// One product in two memory sizes: keyed by memory, each size is a group of its own.
	cards := []Device{t4("A", 0, 16384), t4("B", 1, 8192)}
	cases := map[string]struct {
		reason  string
		value   string
		wantErr bool
		want    []string
	}{
		"Unset":   {reason: "Off by default: the two sizes share the product's group.", want: []string{"tesla-t4"}},
		"True":    {reason: "On: the group ID and the aKey carry the memory.", value: "true", want: []string{"tesla-t4-16g", "tesla-t4-8g"}},
		"False":   {reason: "Off when told so.", value: "false", want: []string{"tesla-t4"}},
		"Invalid": {reason: "A value that is not a boolean is refused, and grouping stays off.", value: "yes please", wantErr: true, want: []string{"tesla-t4"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Cleanup(func() { _ = Configure(func(string) string { return "" }) })
			err := Configure(func(k string) string {
				if k == EnvGroupIDWithMemory {
					return tc.value
				}
				return ""
			})
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\nConfigure(...): error %v, want error %t", tc.reason, err, tc.wantErr)
			}
			var got []string
			for _, g := range DevicesSpec(cards).Groups {
				got = append(got, g.ID)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nDevicesSpec(...) group IDs: -want, +got:\n%s", tc.reason, diff)
			}
			labels := NodeLabels(cards)
			for _, id := range tc.want {
				if labels["acceleratable.feature.gpustack.ai/nvidia-"+id] != "true" {
					t.Errorf("%s\nNodeLabels(...) lacks the group nvidia-%s: %v", tc.reason, id, labels)
				}
			}
		})
	}
}
