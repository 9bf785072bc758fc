package pools

import (
	"strings"
	"testing"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// FuzzNodeFromLabels feeds arbitrary label keys and values: reading a node's profile must never panic, and a
// node it accepts must have a platform and no negative count.
func FuzzNodeFromLabels(f *testing.F) {
	f.Add("general.feature.gpustack.ai/amd-epyc-7r32.count", "4", "acceleratable.feature.gpustack.ai/nvidia-a10g.count", "1")
	f.Add("acceleratable.feature.gpustack.ai/.count", "-3", "general.feature.gpustack.ai/.count", "x")
	f.Add("acceleratable.feature.gpustack.ai/nvidia", "true", "acceleratable.feature.gpustack.ai/nvidia-.memory", "")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		labels := map[string]string{workerv1.LabelOS: "linux", workerv1.LabelArch: "amd64", k1: v1, k2: v2}
		n, err := NodeFromLabels("n", labels, map[string]string{workerv1.AnnotationCPUName: v1})
		if err != nil {
			return
		}
		if n.OS == "" || n.Arch == "" || n.CPU.Cores < 0 {
			t.Errorf("accepted a node without platform or with negative cores: %+v", n)
		}
		for _, g := range n.Groups {
			if g.Count <= 0 || g.Manufacturer == "" {
				t.Errorf("accepted a group without cards or manufacturer: %+v", g)
			}
		}
	})
}

// FuzzGeneralKey checks that any CPU name yields a key that fits the label budget and is label-safe.
func FuzzGeneralKey(f *testing.F) {
	f.Add("AMD", "AMD EPYC 7R32", "25", "1")
	f.Add("Intel", "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz", "", "")
	f.Add("", "@cpu.model", "", "")
	f.Fuzz(func(t *testing.T, vendor, name, family, id string) {
		k := GeneralKey(vendor, name, family, id)
		if k == "" || len(k) > KeyBudget || strings.Trim(k, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" ||
			strings.HasPrefix(k, "-") || strings.HasSuffix(k, "-") {
			t.Errorf("GeneralKey(%q, %q, %q, %q) = %q is no valid key", vendor, name, family, id, k)
		}
	})
}
