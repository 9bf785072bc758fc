package nodecapacity_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gpustack/gpustack-operator/internal/controller/nodecapacity"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.ControllerSuite

func TestMain(m *testing.M) { os.Exit(testenv.ControllerMain(m, &suite)) }

// TestReconcile reconciles one node and reads back its capacity: the counting keys this controller owns next to
// what the kubelet reported. A second reconcile of the converged node must write nothing.
func TestReconcile(t *testing.T) {
	suite.Skip(t)
	cases := map[string]struct {
		reason  string
		node    *corev1.Node
		devices client.Object
		want    map[string]string
	}{
		"SliceableCards": {
			reason:  "Two A10G cards (128 slots, compute overcommit) give each counting key; the kubelet's cpu stays.",
			node:    builders.MakeNode("two-a10g").Capacity(corev1.ResourceCPU, "8").Obj(),
			devices: builders.MakeDevices("two-a10g").Cards("nvidia", "NVIDIA A10G", 24576, 2).Obj(),
			want: map[string]string{"cpu": "8", "nvidia.com/gpu.sliced.units": "3200k",
				"nvidia.com/gpu.sliced.memory-percentage": "200", "nvidia.com/gpu.sliced.memory-mib": "49152",
				"nvidia.com/gpu.sliced.cores-percentage": "25600"},
		},
		"UnhealthyCardLeftOut": {
			reason:  "An unhealthy card gives no counting capacity; a card without compute overcommit counts 100 %.",
			node:    builders.MakeNode("cambricon").Capacity(corev1.ResourceCPU, "4").Obj(),
			devices: builders.MakeDevices("cambricon").Cards("cambricon", "MLU370-X8", 49152, 2).Unhealthy().Obj(),
			want: map[string]string{"cpu": "4", "cambricon.com/mlu.sliced.units": "1600k",
				"cambricon.com/mlu.sliced.memory-percentage": "100", "cambricon.com/mlu.sliced.memory-mib": "49152",
				"cambricon.com/mlu.sliced.cores-percentage": "100"},
		},
		"NoDevices": {
			reason: "A node without a Devices object gets no counting key, and nothing is written.",
			node:   builders.MakeNode("cpu-only").Capacity(corev1.ResourceCPU, "16").Obj(),
			want:   map[string]string{"cpu": "16"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			suite.Create(t, tc.node)
			if tc.devices != nil {
				suite.Create(t, tc.devices)
			}
			c, writes := testenv.CountWrites(suite.Client)
			r := &nodecapacity.Reconciler{Client: c}
			req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(tc.node)}
			ctx := context.Background()
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatalf("%s\nReconcile(...): %v", tc.reason, err)
			}
			node := &corev1.Node{}
			if err := suite.Client.Get(ctx, req.NamespacedName, node); err != nil {
				t.Fatal(err)
			}
			for _, mf := range node.ManagedFields {
				if mf.Manager == nodecapacity.FieldManager && mf.FieldsV1 != nil &&
					(strings.Contains(string(mf.FieldsV1.Raw), "nodeInfo") || strings.Contains(string(mf.FieldsV1.Raw), "daemonEndpoints")) {
					t.Errorf("%s\n%s owns fields of the kubelet's: %s", tc.reason, mf.Manager, mf.FieldsV1.Raw)
				}
			}
			got := map[string]string{}
			for k, v := range node.Status.Capacity {
				got[string(k)] = v.String()
				if a := node.Status.Allocatable[k]; a.Cmp(v) != 0 {
					t.Errorf("%s\nallocatable %s = %s, capacity %s: want them equal", tc.reason, k, a.String(), v.String())
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nReconcile(...): -want, +got:\n%s", tc.reason, diff)
			}
			writes.Reset()
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatal(err)
			}
			if w := writes.List(); len(w) > 0 {
				t.Errorf("%s\na second Reconcile(...) wrote %v, want nothing", tc.reason, w)
			}
		})
	}
}

// TestDevicesGone removes a node's Devices object and expects its counting keys to go with it, while the
// kubelet's capacity stays.
func TestDevicesGone(t *testing.T) {
	suite.Skip(t)
	ctx := context.Background()
	node := builders.MakeNode("devices-gone").Capacity(corev1.ResourceCPU, "8").Obj()
	devices := builders.MakeDevices("devices-gone").Cards("nvidia", "NVIDIA A10G", 24576, 1).Obj()
	suite.Create(t, node, devices)
	r := &nodecapacity.Reconciler{Client: suite.Client}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := suite.Client.Delete(ctx, devices); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Node{}
	if err := suite.Client.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	want := corev1.ResourceList{corev1.ResourceCPU: node.Status.Capacity[corev1.ResourceCPU]}
	if diff := cmp.Diff(want, got.Status.Capacity); diff != "" {
		t.Errorf("Reconcile(after the Devices object went): -want, +got capacity:\n%s", diff)
	}
}
