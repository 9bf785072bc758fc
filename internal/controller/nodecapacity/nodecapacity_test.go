package nodecapacity_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gpustack/gpustack-operator/internal/controller/nodecapacity"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.EnvtestSuite

func TestNodeCapacity(t *testing.T) { testenv.RunSuite(t, "nodecapacity controller suite", &suite) }

var _ = Describe("Reconcile", func() {
	ctx := context.Background()

	DescribeTable("applies the node's counting keys next to the kubelet's capacity, owning nothing else, "+
		"and writes nothing on a converged second reconcile",
		func(node *corev1.Node, devices client.Object, want map[string]string) {
			suite.Create(node)
			if devices != nil {
				suite.Create(devices)
			}
			c, writes := testenv.CountWrites(suite.Client)
			r := &nodecapacity.Reconciler{Client: c}
			req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)}
			_, err := r.Reconcile(ctx, req)
			Expect(err).NotTo(HaveOccurred())

			got := &corev1.Node{}
			Expect(suite.Client.Get(ctx, req.NamespacedName, got)).To(Succeed())
			// The controller applies the counting keys alone: it owns the status' capacity and allocatable and
			// nothing of the kubelet's (nodeInfo, daemonEndpoints).
			applied := map[string]any{}
			if len(writes.List()) > 0 {
				applied["status"] = map[string]any{"capacity": true, "allocatable": true}
			}
			Expect(testenv.OwnershipDiff(got, nodecapacity.FieldManager, applied)).To(BeEmpty(),
				"the fields %s owns: -sent and not owned, +owned and not sent", nodecapacity.FieldManager)
			capacity := map[string]string{}
			for k, v := range got.Status.Capacity {
				capacity[string(k)] = v.String()
				a := got.Status.Allocatable[k]
				Expect(a.Cmp(v)).To(Equal(0), "allocatable %s = %s, capacity %s: want them equal", k, a.String(), v.String())
			}
			Expect(cmp.Diff(want, capacity)).To(BeEmpty(), "Reconcile(...): -want, +got capacity")

			writes.ExpectConverged(func() error { _, err := r.Reconcile(ctx, req); return err })
		},
		Entry("two A10G cards (128 slots, compute overcommit) give each counting key; the kubelet's cpu stays",
			builders.MakeNode("two-a10g").Capacity(corev1.ResourceCPU, "8").Obj(),
			builders.MakeDevices("two-a10g").Cards("nvidia", "NVIDIA A10G", 24576, 2).Obj(),
			map[string]string{"cpu": "8", "nvidia.com/gpu.sliced.units": "3200k",
				"nvidia.com/gpu.sliced.memory-percentage": "200", "nvidia.com/gpu.sliced.memory-mib": "49152",
				"nvidia.com/gpu.sliced.cores-percentage": "25600"}),
		Entry("an unhealthy card gives no counting capacity; a card without compute overcommit counts 100 %",
			builders.MakeNode("iluvatar").Capacity(corev1.ResourceCPU, "4").Obj(),
			builders.MakeDevices("iluvatar").Cards("iluvatar", "BI-V150", 49152, 2).Unhealthy().Obj(),
			map[string]string{"cpu": "4", "iluvatar.com/gpu.sliced.units": "1600k",
				"iluvatar.com/gpu.sliced.memory-percentage": "100", "iluvatar.com/gpu.sliced.memory-mib": "49152",
				"iluvatar.com/gpu.sliced.cores-percentage": "100"}),
		Entry("cards whose slices the agent cannot enforce (Cambricon) give no slice counting keys",
			builders.MakeNode("cambricon").Capacity(corev1.ResourceCPU, "4").Obj(),
			builders.MakeDevices("cambricon").Cards("cambricon", "MLU370-X8", 49152, 2).Obj(),
			map[string]string{"cpu": "4"}),
		Entry("a node without a Devices object gets no counting key, and nothing is written",
			builders.MakeNode("cpu-only").Capacity(corev1.ResourceCPU, "16").Obj(), nil,
			map[string]string{"cpu": "16"}),
	)

	It("removes the counting keys with the node's Devices object and keeps the kubelet's capacity", func() {
		node := builders.MakeNode("devices-gone").Capacity(corev1.ResourceCPU, "8").Obj()
		devices := builders.MakeDevices("devices-gone").Cards("nvidia", "NVIDIA A10G", 24576, 1).Obj()
		suite.Create(node, devices)
		r := &nodecapacity.Reconciler{Client: suite.Client}
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)}
		_, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(suite.Client.Delete(ctx, devices)).To(Succeed())
		_, err = r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		got := &corev1.Node{}
		Expect(suite.Client.Get(ctx, req.NamespacedName, got)).To(Succeed())
		want := corev1.ResourceList{corev1.ResourceCPU: node.Status.Capacity[corev1.ResourceCPU]}
		Expect(cmp.Diff(want, got.Status.Capacity)).To(BeEmpty(), "capacity after the Devices object went: -want, +got")
	})

	It("shows a node whose card-count labels its inventory does not back, and clears it once they agree", func() {
		const t4 = "acceleratable.feature.gpustack.ai/nvidia-tesla-t4"
		node := builders.MakeNode("crafted").Capacity(corev1.ResourceCPU, "16").
			Label(corev1.LabelOSStable, "linux").Label(corev1.LabelArchStable, "amd64").
			Label(t4, "true").Label(t4+".count", "2000000000").Obj()
		suite.Create(node)
		c, writes := testenv.CountWrites(suite.Client)
		r := &nodecapacity.Reconciler{Client: c}
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)}
		condition := func() *corev1.NodeCondition {
			GinkgoHelper()
			_, err := r.Reconcile(ctx, req)
			Expect(err).NotTo(HaveOccurred())
			got := &corev1.Node{}
			Expect(suite.Client.Get(ctx, req.NamespacedName, got)).To(Succeed())
			for _, c := range got.Status.Conditions {
				if c.Type == nodecapacity.ConditionInventoryDisagrees {
					return &c
				}
			}
			return nil
		}
		got := condition()
		Expect(got).NotTo(BeNil(), "the node's condition")
		Expect(got.Status).To(Equal(corev1.ConditionTrue))
		Expect(got.Reason).To(Equal(nodecapacity.ReasonLabelsNotBacked))
		Expect(got.Message).To(Equal("node crafted: label " + t4 + ".count=2000000000 claims cards, and the node has no Devices inventory; the node is left out of every pool"))
		writes.ExpectConverged(func() error { _, err := r.Reconcile(ctx, req); return err })

		devices := builders.MakeDevices("crafted").Cards("nvidia", "Tesla T4", 15360, 2).Obj()
		suite.Create(devices)
		Expect(condition().Message).To(HaveSuffix("its Devices inventory lists 2 such cards; the node is left out of every pool"))

		current := &corev1.Node{}
		Expect(suite.Client.Get(ctx, req.NamespacedName, current)).To(Succeed())
		current.Labels[t4+".count"] = "2"
		Expect(suite.Client.Update(ctx, current)).To(Succeed())
		Expect(condition()).To(BeNil(), "labels and inventory agree: no condition")
	})
})
