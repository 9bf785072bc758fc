package nodefit_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/nodefit"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.EnvtestSuite

func TestNodeFit(t *testing.T) { testenv.RunSuite(t, "node fit labels suite", &suite) }

// A managed node's fit labels follow its ledger in its fit NodeFeature, a converged reconcile writes nothing,
// and a node taken out of the pools loses them with the NodeFeature.
var _ = It("keeps a node's fit labels in its fit NodeFeature", func(ctx context.Context) {
	node := builders.MakeNode("fit-a10g").Label(workerv1.LabelManaged, "true").Obj()
	devices := builders.MakeDevices("fit-a10g").Cards("nvidia", "NVIDIA A10G", 24576, 2).Obj()
	suite.Create(node, devices)

	c, writes := testenv.CountWrites(suite.Client)
	r := &nodefit.Reconciler{Client: c}
	req := reconcile.Request{NamespacedName: client.ObjectKey{Name: "fit-a10g"}}
	labels := func() map[string]string {
		GinkgoHelper()
		_, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		nf := &nfdv1alpha1.NodeFeature{}
		err = suite.Client.Get(ctx, client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: workerv1.NodeFeatureName("fit-a10g", workerv1.NodeFeatureFit)}, nf)
		if apierrors.IsNotFound(err) {
			return nil
		}
		Expect(err).NotTo(HaveOccurred())
		Expect(nf.Labels).To(HaveKeyWithValue(nfdv1alpha1.NodeFeatureObjNodeNameLabel, "fit-a10g"), "NFD finds the node by this label")
		return nf.Spec.Labels
	}
	Expect(labels()).To(Equal(map[string]string{"sliced-max-free-units.fit.gpustack.ai/nvidia-a10g": "1600000",
		"shared-free-cards.fit.gpustack.ai/nvidia-a10g": "2"}), "two free A10Gs")
	writes.ExpectConverged(func() error { _, err := r.Reconcile(ctx, req); return err })

	// A 70 % slice on one card, the other held whole.
	a := devices.Spec.Groups[0].Accelerators
	devices.Status.Groups = []workerv1.GroupAllocation{{ID: devices.Spec.Groups[0].ID, Manufacturer: "nvidia", Accelerators: []workerv1.AcceleratorAllocation{
		{ID: a[0].ID, Mode: workerv1.AllocationSliced, Allocated: pools.M * 7 / 10, Remaining: pools.M * 3 / 10, AllocatedSlices: 1},
		{ID: a[1].ID, Index: 1, Mode: workerv1.AllocationExclusive, Allocated: pools.M},
	}}}
	Expect(suite.Client.Status().Update(ctx, devices)).To(Succeed())
	Expect(labels()).To(Equal(map[string]string{"sliced-max-free-units.fit.gpustack.ai/nvidia-a10g": "480000",
		"shared-free-cards.fit.gpustack.ai/nvidia-a10g": "0"}), "the freest piece is 30 %; no card gives a share")

	node.Labels[workerv1.LabelManaged] = "false"
	Expect(suite.Client.Update(ctx, node)).To(Succeed())
	Expect(labels()).To(BeNil(), "a node out of the pools has no fit labels")
})
