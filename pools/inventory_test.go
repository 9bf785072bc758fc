package pools

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

func TestCheckInventory(t *testing.T) {
	a10g := func(cards int) *workerv1.Devices {
		return &workerv1.Devices{Spec: workerv1.DevicesSpec{Groups: []workerv1.DeviceGroup{{ID: "g", Manufacturer: "nvidia",
			Name: "NVIDIA A10G", Accelerators: make([]workerv1.Accelerator, cards)}}}}
	}
	labels := func(count string) map[string]string {
		l := map[string]string{workerv1.LabelOS: "linux", workerv1.LabelArch: "amd64"}
		if count != "" {
			l[workerv1.AcceleratablePrefix+"nvidia-a10g"], l[workerv1.AcceleratablePrefix+"nvidia-a10g.count"] = "true", count
		}
		return l
	}
	cases := map[string]struct {
		reason string
		labels map[string]string
		d      *workerv1.Devices
		want   string
	}{
		"Agree": {
			reason: "Labels that count the inventory's cards pass.",
			labels: labels("2"), d: a10g(2),
		},
		"CPUNode": {
			reason: "A node that claims no card needs no inventory.",
			labels: labels(""),
		},
		"NoInventory": {
			reason: "A count on a node with no Devices inventory (a CPU node's crafted label) is refused.",
			labels: labels("2000000000"),
			want:   "node n: label acceleratable.feature.gpustack.ai/nvidia-a10g.count=2000000000 claims cards, and the node has no Devices inventory",
		},
		"MoreThanInventory": {
			reason: "A count above the inventory's is refused, naming both.",
			labels: labels("4"), d: a10g(2),
			want: "node n: label acceleratable.feature.gpustack.ai/nvidia-a10g.count=4, and its Devices inventory lists 2 such cards",
		},
		"OtherGroup": {
			reason: "Cards of another product do not back the count.",
			labels: labels("1"), d: &workerv1.Devices{Spec: workerv1.DevicesSpec{Groups: []workerv1.DeviceGroup{{ID: "g",
				Manufacturer: "nvidia", Name: "Tesla T4", Accelerators: make([]workerv1.Accelerator, 1)}}}},
			want: "node n: label acceleratable.feature.gpustack.ai/nvidia-a10g.count=1, and its Devices inventory lists 0 such cards",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n, err := NodeFromLabels("n", tc.labels, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if err := n.CheckInventory(tc.d); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCheckInventory(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
