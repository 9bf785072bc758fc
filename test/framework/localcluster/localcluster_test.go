package localcluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
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
	got := view{Labels: node.Labels, CPUName: node.Annotations[workerv1.AnnotationCPUName], Capacity: map[string]string{}}
	for k, v := range node.Status.Capacity {
		got.Capacity[string(k)] = v.String()
	}
	want := view{
		Labels: map[string]string{
			corev1.LabelHostname: "node-t4-b", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
			"type": "kwok", workerv1.LabelCPUVendor: "Intel", workerv1.LabelCPUFamily: "6", workerv1.LabelCPUModelID: "85",
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
