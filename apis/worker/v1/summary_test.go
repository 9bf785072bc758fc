package v1

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

func view(capacity, onceMax, remaining int64) *CapacityView {
	return &CapacityView{
		Capacity:       *resource.NewQuantity(capacity, resource.DecimalSI),
		OnceMaxRequest: *resource.NewQuantity(onceMax, resource.DecimalSI),
		Remaining:      *resource.NewQuantity(remaining, resource.DecimalSI),
	}
}

func TestSummarize(t *testing.T) {
	cases := map[string]struct {
		reason string
		it     InstanceType
		want   InstanceTypeSummary
	}{
		"WalkthroughA10G": {
			reason: "The derived A10G pool of Step 1 prints its unit and four views, CPU 0/0.",
			it: InstanceType{
				Spec: InstanceTypeSpec{
					UnitResources: UnitResources{CPU: resource.MustParse("8"), RAM: resource.MustParse("64Gi")},
					LocalStorage:  resource.MustParse("100Gi"),
				},
				Status: InstanceTypeStatus{
					Accelerator:            view(1, 1, 1),
					AcceleratorShared:      view(10, 1, 10),
					AcceleratorSliced:      view(100, 100, 100),
					AcceleratorPartitioned: &PartitionedView{CapacityView: *view(0, 0, 0)},
				},
			},
			want: InstanceTypeSummary{Unit: "8/64Gi/100Gi", Accelerator: "1/1 1/10 100/100 0/0", CPU: "0/0"},
		},
		"GenericCPU": {
			reason: "A CPU pool has no accelerator views: they print 0/0.",
			it: InstanceType{
				Spec: InstanceTypeSpec{
					UnitResources: UnitResources{CPU: resource.MustParse("1"), RAM: resource.MustParse("2Gi")},
					LocalStorage:  resource.MustParse("100Gi"),
				},
				Status: InstanceTypeStatus{CPU: view(72, 48, 72)},
			},
			want: InstanceTypeSummary{Unit: "1/2Gi/100Gi", Accelerator: "0/0 0/0 0/0 0/0", CPU: "48/72"},
		},
		"BigPool": {
			reason: "Twenty cards print their 2000 percent of slices as a number, not as the quantity 2k.",
			it: InstanceType{
				Spec: InstanceTypeSpec{
					UnitResources: UnitResources{CPU: resource.MustParse("8"), RAM: resource.MustParse("64Gi")},
					LocalStorage:  resource.MustParse("100Gi"),
				},
				Status: InstanceTypeStatus{
					Accelerator:       view(20, 4, 20),
					AcceleratorShared: view(200, 4, 200),
					AcceleratorSliced: view(2000, 100, 2000),
				},
			},
			want: InstanceTypeSummary{Unit: "8/64Gi/100Gi", Accelerator: "4/20 4/200 100/2000 0/0", CPU: "0/0"},
		},
		"Partitions": {
			reason: "Remaining partitions print sorted by profile for -o wide.",
			it: InstanceType{
				Spec: InstanceTypeSpec{
					UnitResources: UnitResources{CPU: resource.MustParse("12"), RAM: resource.MustParse("192Gi")},
					LocalStorage:  resource.MustParse("100Gi"),
				},
				Status: InstanceTypeStatus{AcceleratorPartitioned: &PartitionedView{
					CapacityView:      *view(56, 1, 52),
					RemainingProfiles: []ProfileCount{{Name: "7g.80gb", Count: 7}, {Name: "1g.10gb", Count: 52}},
				}},
			},
			want: InstanceTypeSummary{Unit: "12/192Gi/100Gi", Accelerator: "0/0 0/0 0/0 1/52", CPU: "0/0",
				Partitions: "1g.10gb=52,7g.80gb=7"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.it.Summarize()
			if diff := cmp.Diff(tc.want, tc.it.Status.Summary); diff != "" {
				t.Errorf("%s\nSummarize(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestLookupSetting(t *testing.T) {
	d, ok := LookupSetting(SettingInstancePrivilegedAllowed)
	if !ok || d.Default != "false" || d.Kind != SettingBool {
		t.Errorf("LookupSetting(%q) = %+v, %v; want a boolean defaulting to false", SettingInstancePrivilegedAllowed, d, ok)
	}
	if _, ok := LookupSetting("no-such-setting"); ok {
		t.Errorf("LookupSetting(no-such-setting) found a definition")
	}
	seen := map[string]bool{}
	for _, d := range SettingDefinitions {
		if seen[d.Name] {
			t.Errorf("setting %s is defined twice", d.Name)
		}
		seen[d.Name] = true
		if d.Kind == SettingBool && d.Default != "true" && d.Default != "false" {
			t.Errorf("boolean setting %s defaults to %q", d.Name, d.Default)
		}
		if _, err := time.ParseDuration(d.Default); d.Kind == SettingDuration && err != nil {
			t.Errorf("duration setting %s defaults to %q: %v", d.Name, d.Default, err)
		}
	}
}
