package kueueconfig

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
)

func TestTransformations(t *testing.T) {
	got := map[string]string{}
	dropped, multiplied := 0, ""
	for _, tr := range Transformations() {
		for out, q := range tr.Outputs {
			got[string(tr.Input)] = string(out) + "=" + q.String()
		}
		if len(tr.Outputs) == 0 && *tr.Strategy == configapi.Replace {
			dropped++
		}
		if tr.Input == "nvidia.com/gpu.sliced.units" {
			multiplied = string(tr.MultiplyBy)
		}
	}
	want := map[string]string{
		"nvidia.com/gpu":                  "credits.gpustack.ai/nvidia=1600k",
		"nvidia.com/gpu.shared":           "credits.gpustack.ai/nvidia=160k",
		"nvidia.com/gpu.sliced.units":     "credits.gpustack.ai/nvidia=1",
		"huawei.com/npu":                  "credits.gpustack.ai/ascend=1600k",
		"alibabacloud.com/ppu.shared":     "credits.gpustack.ai/thead=160k",
		"metax-tech.com/gpu.sliced.units": "credits.gpustack.ai/metax=1",
		"hygon.com/dcu.partitioned.units": "credits.gpustack.ai/hygon=1",
		"cambricon.com/mlu":               "credits.gpustack.ai/cambricon=1600k",
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			delete(got, k)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Transformations(): into credits: -want, +got:\n%s", diff)
	}
	if n := len(Transformations()); n != 9*9 || dropped != 9*5 || multiplied != "nvidia.com/gpu.sliced" {
		t.Errorf("Transformations(): %d, want 4 into credits and 5 that drop a budget key for each of the 9 vendors (%d dropped); "+
			"units multiplied by %q, want nvidia.com/gpu.sliced", n, dropped, multiplied)
	}
}

func TestDeviceClassMappings(t *testing.T) {
	got := map[string]string{}
	for _, m := range DeviceClassMappings() {
		var sources []string
		for _, s := range m.Sources {
			if c := s.Counter; c != nil && c.DeviceSelector.CEL != nil {
				sources = append(sources, "counter "+c.Name+" of "+c.Driver+" where "+c.DeviceSelector.CEL.Expression)
			}
		}
		var classes []string
		for _, c := range m.DeviceClassNames {
			classes = append(classes, string(c))
		}
		got[string(m.Name)] = strings.Join(classes, ",") + ": " + strings.Join(sources, "; ")
	}
	want := map[string]string{
		"credits.gpustack.ai/nvidia": `gpustack-nvidia: counter credits of nvidia.gpustack.ai where device.driver == "nvidia.gpustack.ai"`,
		"credits.gpustack.ai/thead":  `gpustack-thead: counter credits of thead.gpustack.ai where device.driver == "thead.gpustack.ai"`,
	}
	if len(got) != 9 {
		t.Errorf("DeviceClassMappings(): %d mappings, want one for each of the 9 vendors", len(got))
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			delete(got, k)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DeviceClassMappings(): a vendor's class charged by its cards' credits counter: -want, +got:\n%s", diff)
	}
}

func TestCheck(t *testing.T) {
	required, err := Required()
	if err != nil {
		t.Fatal(err)
	}
	full := func() *configapi.Configuration {
		cfg, err := Parse(append([]byte("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"), required...))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cases := map[string]struct {
		reason string
		edit   func(*configapi.Configuration)
		// lines is how many lines Check returns, among them want.
		lines int
		want  []string
	}{
		"Complete": {
			reason: "what Required says, with more of the administrator's own, lacks nothing",
			edit: func(c *configapi.Configuration) {
				c.Integrations.Frameworks = append(c.Integrations.Frameworks, "jobset.x-k8s.io/jobset")
				c.Resources.Transformations = append(c.Resources.Transformations, configapi.ResourceTransformation{Input: "example.com/fpga"})
			},
		},
		"StockKueue": {
			reason: "a stock Kueue (no Pod integration, no transformations) lacks all of it, each thing named",
			edit: func(c *configapi.Configuration) {
				c.Integrations.Frameworks = []string{"batch/job"}
				c.Resources = nil
			},
			// One integration, nine transformations per vendor, and six exclusions: memory, storage, the
			// visibility keys and the per-profile keys of the three vendors with partitions.
			lines: 1 + 9*9 + 6,
			want: []string{`integrations.frameworks lacks "pod"`, "resources.excludeResourcePrefixes lacks \"memory\"",
				"resources.excludeResourcePrefixes lacks \"nvidia.com/gpu.partitioned.mig-\"",
				"resources.transformations lacks nvidia.com/gpu.sliced.units (Replace by 1 credits.gpustack.ai/nvidia times nvidia.com/gpu.sliced)"},
		},
		"WrongAmount": {
			reason: "a whole card charged 1000 credits is named with what it is and what it must be",
			edit: func(c *configapi.Configuration) {
				for i, tr := range c.Resources.Transformations {
					if tr.Input == "amd.com/gpu" {
						c.Resources.Transformations[i].Outputs = corev1.ResourceList{"credits.gpustack.ai/amd": resource.MustParse("1000")}
					}
				}
			},
			lines: 1,
			want:  []string{"resources.transformations[amd.com/gpu] is Replace by 1k credits.gpustack.ai/amd, want Replace by 1600k credits.gpustack.ai/amd"},
		},
		"Missing": {
			reason: "a missing transformation is named with what it must do",
			edit: func(c *configapi.Configuration) {
				c.Resources.Transformations = c.Resources.Transformations[1:]
			},
			lines: 1,
			want:  []string{"resources.transformations lacks nvidia.com/gpu (Replace by 1600k credits.gpustack.ai/nvidia)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := full()
			tc.edit(cfg)
			got := Check(cfg)
			if len(got) != tc.lines {
				t.Errorf("%s\nCheck(...): %d lines, want %d: %v", tc.reason, len(got), tc.lines, got)
			}
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("%s\nCheck(...): no line %q in %v", tc.reason, w, got)
				}
			}
		})
	}
}

func TestParse(t *testing.T) {
	if _, err := Parse([]byte("apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n")); err != nil {
		t.Errorf("Parse(v1beta1): %v", err)
	}
	if _, err := Parse([]byte("apiVersion: v1\nkind: ConfigMap\n")); err == nil || !strings.Contains(err.Error(), `apiVersion "v1"`) {
		t.Errorf("Parse(a ConfigMap): error %v, want one naming the apiVersion", err)
	}
}
