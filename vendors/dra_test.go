package vendors

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDRANames(t *testing.T) {
	cases := map[string]struct {
		reason string
		name   string
		lookup func(string) (Vendor, bool)
		want   string
	}{
		"Driver":         {reason: "A vendor's driver finds its vendor.", name: "nvidia.gpustack.ai", lookup: DRADriverVendor, want: "nvidia"},
		"OtherDriver":    {reason: "NVIDIA's own driver is not this project's.", name: "gpu.nvidia.com", lookup: DRADriverVendor},
		"AliasDriver":    {reason: "Only a vendor's key names its driver, not an alias.", name: "huawei.gpustack.ai", lookup: DRADriverVendor},
		"Class":          {reason: "A vendor's DeviceClass finds its vendor.", name: DRADeviceClass("ascend"), lookup: DRADeviceClassVendor, want: "ascend"},
		"OtherClass":     {reason: "Another DeviceClass is not this project's.", name: "gpu.nvidia.com", lookup: DRADeviceClassVendor},
		"AliasClass":     {reason: "Only a vendor's key names its class, not an alias.", name: "gpustack-huawei", lookup: DRADeviceClassVendor},
		"UnknownInClass": {reason: "A class of the project's prefix and no vendor is none.", name: "gpustack-acme", lookup: DRADeviceClassVendor},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v, ok := tc.lookup(tc.name)
			if ok != (tc.want != "") {
				t.Errorf("%s\nlookup(%q): found %t, want %t", tc.reason, tc.name, ok, tc.want != "")
			}
			if diff := cmp.Diff(tc.want, v.Key); diff != "" {
				t.Errorf("%s\nlookup(%q): -want, +got:\n%s", tc.reason, tc.name, diff)
			}
		})
	}
}
