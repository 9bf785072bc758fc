package localcluster

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	configv1beta2 "sigs.k8s.io/kueue/apis/config/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

func TestNodeFor(t *testing.T) {
	inv, err := simulated.Load(testenv.Path("examples", "clusters", "walkthrough.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	node := NodeFor(inv.Nodes[3]) // node-t4-b: 48 cores, 4 T4
	type view struct {
		Labels   map[string]string
		CPUName  string
		Capacity map[string]string
	}
	got := view{Labels: node.Labels, CPUName: node.Annotations[pools.AnnotationCPUName], Capacity: map[string]string{}}
	for k, v := range node.Status.Capacity {
		got.Capacity[string(k)] = v.String()
	}
	want := view{
		Labels: map[string]string{
			corev1.LabelHostname: "node-t4-b", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
			"type": "kwok", pools.LabelCPUVendor: "Intel", "feature.node.kubernetes.io/pci-10de.present": "true",
		},
		CPUName: "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz",
		Capacity: map[string]string{"cpu": "48", "memory": "192Gi", "ephemeral-storage": "200Gi", "pods": "110",
			"nvidia.com/gpu": "4", "nvidia.com/gpu.shared": "40", "nvidia.com/gpu.sliced": "512",
			"device.gpustack.ai/nvidia.visibility": "512"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the KWOK node of node-t4-b\nNodeFor(...): -want, +got:\n%s", diff)
	}
}

func TestKueueConfiguration(t *testing.T) {
	cfg := &configv1beta2.Configuration{}
	if err := yaml.UnmarshalStrict([]byte(KueueConfiguration(1, 2, 3, "/certs")), cfg); err != nil {
		t.Fatalf("KueueConfiguration(...) is not a valid Kueue configuration: %v", err)
	}
	got := map[string]string{}
	for _, tr := range cfg.Resources.Transformations {
		for out, q := range tr.Outputs {
			got[string(tr.Input)] = string(out) + "=" + q.String()
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
		t.Errorf("transformations into credits: -want, +got:\n%s", diff)
	}
	if n := len(cfg.Resources.Transformations); n != 9*9 {
		t.Errorf("got %d transformations, want 4 into credits and 5 that drop a budget key for each of the 9 vendors", n)
	}
	dropped, multiplied := 0, ""
	for _, tr := range cfg.Resources.Transformations {
		if len(tr.Outputs) == 0 && *tr.Strategy == configv1beta2.Replace {
			dropped++
		}
		if tr.Input == "nvidia.com/gpu.sliced.units" {
			multiplied = string(tr.MultiplyBy)
		}
	}
	if dropped != 9*5 || multiplied != "nvidia.com/gpu.sliced" {
		t.Errorf("budget keys dropped from quota: %d, want 45; units multiplied by %q, want nvidia.com/gpu.sliced", dropped, multiplied)
	}
	if diff := cmp.Diff([]string{"memory", "ephemeral-storage", "device.gpustack.ai/"}, cfg.Resources.ExcludeResourcePrefixes); diff != "" {
		t.Errorf("resources no queue judges are left out: -want, +got:\n%s", diff)
	}
	if q := resource.MustParse("1600k"); q.Value() != 1_600_000 {
		t.Fatalf("1600k is %d", q.Value())
	}
}

func TestKueueWebhooks(t *testing.T) {
	bin, skip, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	manifests, err := os.ReadFile(filepath.Join(bin, "assets", "kueue-webhooks.yaml"))
	if err != nil {
		t.Fatalf("run `make tools`: %v", err)
	}
	m, v, err := KueueWebhooks(manifests, "https://127.0.0.1:9443", []byte("CA"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range m.Webhooks {
		names = append(names, w.Name+" "+*w.ClientConfig.URL)
		if w.ClientConfig.Service != nil || string(w.ClientConfig.CABundle) != "CA" {
			t.Errorf("webhook %s does not call the loopback URL with the local CA", w.Name)
		}
	}
	for _, w := range v.Webhooks {
		names = append(names, w.Name+" "+*w.ClientConfig.URL)
	}
	sort.Strings(names)
	want := []string{
		"mclusterqueue.kb.io https://127.0.0.1:9443/mutate-kueue-x-k8s-io-v1beta2-clusterqueue",
		"mjob.kb.io https://127.0.0.1:9443/mutate-batch-v1-job",
		"mpod.kb.io https://127.0.0.1:9443/mutate--v1-pod",
		"mresourceflavor.kb.io https://127.0.0.1:9443/mutate-kueue-x-k8s-io-v1beta2-resourceflavor",
		"mworkload.kb.io https://127.0.0.1:9443/mutate-kueue-x-k8s-io-v1beta2-workload",
		"vclusterqueue.kb.io https://127.0.0.1:9443/validate-kueue-x-k8s-io-v1beta2-clusterqueue",
		"vcohort.kb.io https://127.0.0.1:9443/validate-kueue-x-k8s-io-v1beta2-cohort",
		"vjob.kb.io https://127.0.0.1:9443/validate-batch-v1-job",
		"vpod.kb.io https://127.0.0.1:9443/validate--v1-pod",
		"vresourceflavor.kb.io https://127.0.0.1:9443/validate-kueue-x-k8s-io-v1beta2-resourceflavor",
		"vworkload.kb.io https://127.0.0.1:9443/validate-kueue-x-k8s-io-v1beta2-workload",
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("only the webhooks the local Kueue serves, on loopback: -want, +got:\n%s", diff)
	}
}
