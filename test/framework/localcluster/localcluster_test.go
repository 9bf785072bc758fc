package localcluster

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	configv1beta2 "sigs.k8s.io/kueue/apis/config/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/gpustack/gpustack-operator/internal/kueueconfig"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

func TestNodeFor(t *testing.T) {
	inv, err := simulated.Load(testenv.Path("examples", "clusters", "walkthrough.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	node := kwokNode(inv.Nodes[3]) // node-t4-b: 48 cores, 4 T4
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
			"type": "kwok", pools.LabelCPUVendor: "Intel", pools.LabelCPUFamily: "6", pools.LabelCPUModelID: "85",
			"feature.node.kubernetes.io/pci-10de.present": "true",
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
	data, err := KueueConfiguration(1, 2, 3, "/certs")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &configv1beta2.Configuration{}
	if err := yaml.UnmarshalStrict([]byte(data), cfg); err != nil {
		t.Fatalf("KueueConfiguration(...) is not a valid Kueue configuration: %v", err)
	}
	if missing := kueueconfig.Check(cfg); len(missing) > 0 {
		t.Errorf("KueueConfiguration(...) lacks what the operator needs: %v", missing)
	}
	if cfg.Webhook.Port == nil || *cfg.Webhook.Port != 1 || cfg.Namespace == nil || *cfg.Namespace != "kueue-system" {
		t.Errorf("KueueConfiguration(...): the local cluster's addresses: webhook %+v, namespace %v", cfg.Webhook, cfg.Namespace)
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
