package cpureporter

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/providers/cpuinfo"
)

func TestSpec(t *testing.T) {
	type want struct {
		Labels map[string]string
		Facts  map[string]string
	}
	cases := map[string]struct {
		reason string
		cpu    cpuinfo.CPU
		want   want
	}{
		"Xeon": {
			reason: "The identity as NFD's cpu-model labels, acceleratable=false, and every fact as a feature attribute.",
			cpu:    cpuinfo.CPU{Name: "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz", Vendor: "Intel", Family: "6", Model: "85", LogicalCores: 4, PhysicalCores: 4},
			want: want{
				Labels: map[string]string{"feature.gpustack.ai/acceleratable": "false", "feature.node.kubernetes.io/cpu-model.vendor_id": "Intel",
					"feature.node.kubernetes.io/cpu-model.family": "6", "feature.node.kubernetes.io/cpu-model.id": "85"},
				Facts: map[string]string{"name": "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz", "family": "6",
					"logical-cores": "4", "physical-cores": "4", "threads-per-core": "1"},
			},
		},
		"UnlabellableVendor": {
			reason: "A raw vendor string that is no valid label value is left to NFD's cpuid label, not written broken.",
			cpu:    cpuinfo.CPU{Vendor: "VIA VIA VIA", LogicalCores: 1, PhysicalCores: 1},
			want: want{
				Labels: map[string]string{"feature.gpustack.ai/acceleratable": "false"},
				Facts:  map[string]string{"logical-cores": "1", "physical-cores": "1", "threads-per-core": "1"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := Spec(tc.cpu)
			got := want{Labels: spec.Labels, Facts: spec.Features.Attributes[Feature].Elements}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nSpec(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
