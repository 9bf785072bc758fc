package profiler_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/profiler"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.EnvtestSuite

func TestProfiler(t *testing.T) { testenv.RunSuite(t, "profiler controller suite", &suite) }

// epycNode is the walkthrough's CPU node as NFD labels it: 16 cores of an AMD EPYC 7R13.
func epycNode(name string) *corev1.Node {
	return builders.MakeNode(name).Label(workerv1.LabelCPUVendor, "AMD").
		Annotation(workerv1.AnnotationCPUName, "AMD EPYC 7R13 Processor").Capacity(corev1.ResourceCPU, "16").Obj()
}

func workerFeature(node string, labels map[string]string) *nfdv1alpha1.NodeFeature {
	return &nfdv1alpha1.NodeFeature{
		ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: workerv1.NodeFeatureName(node, workerv1.NodeFeatureProfile),
			Labels: map[string]string{nfdv1alpha1.NodeFeatureObjNodeNameLabel: node, "app.kubernetes.io/part-of": profiler.PartOf}},
		Spec: nfdv1alpha1.NodeFeatureSpec{Labels: labels},
	}
}

// epyc are the worker labels of epycNode, without gpustack.ai/managed.
var epyc = map[string]string{"general.feature.gpustack.ai/amd-epyc-7r13": "true",
	"general.feature.gpustack.ai/amd-epyc-7r13.count": "16", "general.feature.gpustack.ai/amd": "true"}

func with(l map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for k, v := range l {
		out[k] = v
	}
	return out
}

// withLabel returns d with the label k=v.
func withLabel(d *workerv1.Devices, k, v string) *workerv1.Devices {
	d.Labels = with(d.Labels, k, v)
	return d
}

// want is what a spec reads back: the worker NodeFeature's labels and the Devices object's identity labels.
type want struct {
	Feature       map[string]string
	DevicesLabels map[string]string
}

var _ = Describe("Reconcile", func() {
	ctx := context.Background()

	DescribeTable("publishes the node's worker NodeFeature and stamps its Devices object, then writes nothing "+
		"on a converged second reconcile",
		func(objects []client.Object, w want) {
			suite.Create(objects...)
			node := objects[0]
			DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), workerFeature(node.GetName(), nil)) })
			c, writes := testenv.CountWrites(suite.Client)
			r := &profiler.Reconciler{Client: c, Recorder: record.NewFakeRecorder(10)}
			req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)}
			_, err := r.Reconcile(ctx, req)
			Expect(err).NotTo(HaveOccurred())

			nf := &nfdv1alpha1.NodeFeature{}
			Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(workerFeature(node.GetName(), nil)), nf)).To(Succeed())
			got := want{Feature: nf.Spec.Labels}
			d := &workerv1.Devices{}
			if err := suite.Client.Get(ctx, req.NamespacedName, d); err == nil {
				got.DevicesLabels = d.Labels
			}
			Expect(cmp.Diff(w, got)).To(BeEmpty(), "Reconcile(...): -want, +got")
			Expect(nf.Labels).To(HaveKeyWithValue(nfdv1alpha1.NodeFeatureObjNodeNameLabel, node.GetName()))

			writes.ExpectConverged(func() error { _, err := r.Reconcile(ctx, req); return err })
		},
		Entry("a new node is managed, with its CPU's gKey, core count and manufacturer",
			[]client.Object{epycNode("new")}, want{Feature: with(epyc, workerv1.LabelManaged, "true")}),
		Entry("an administrator's gpustack.ai/managed=false on the NodeFeature takes the node out of its pools and stays",
			[]client.Object{epycNode("unmanaged"), workerFeature("unmanaged", map[string]string{workerv1.LabelManaged: "false"})},
			want{Feature: with(epyc, workerv1.LabelManaged, "false")}),
		Entry("the node's Devices object gets the node's platform, managed flag and gKey as labels",
			[]client.Object{builders.MakeNode("stamped").Label(workerv1.LabelCPUVendor, "AMD").Label(workerv1.LabelManaged, "true").
				Label("general.feature.gpustack.ai/amd-epyc-7r13", "true").Label("general.feature.gpustack.ai/amd-epyc-7r13.count", "16").
				Annotation(workerv1.AnnotationCPUName, "AMD EPYC 7R13 Processor").Capacity(corev1.ResourceCPU, "16").Obj(),
				builders.MakeDevices("stamped").Cards("nvidia", "NVIDIA A10G", 24576, 1).Obj()},
			want{Feature: with(epyc, workerv1.LabelManaged, "true"), DevicesLabels: map[string]string{
				workerv1.LabelOS: "linux", workerv1.LabelArch: "amd64", workerv1.LabelManaged: "true",
				"general.feature.gpustack.ai/amd-epyc-7r13": "true"}}),
		Entry("a CPU key the Devices object had before (the fallback, before the brand was read) is taken off",
			[]client.Object{builders.MakeNode("restamped").Label(workerv1.LabelCPUVendor, "AMD").Label(workerv1.LabelManaged, "true").
				Label("general.feature.gpustack.ai/amd-epyc-7r13", "true").Label("general.feature.gpustack.ai/amd-epyc-7r13.count", "16").
				Annotation(workerv1.AnnotationCPUName, "AMD EPYC 7R13 Processor").Capacity(corev1.ResourceCPU, "16").Obj(),
				withLabel(builders.MakeDevices("restamped").Cards("nvidia", "NVIDIA A10G", 24576, 1).Obj(),
					"general.feature.gpustack.ai/amd-23-1", "true")},
			want{Feature: with(epyc, workerv1.LabelManaged, "true"), DevicesLabels: map[string]string{
				workerv1.LabelOS: "linux", workerv1.LabelArch: "amd64", workerv1.LabelManaged: "true",
				"general.feature.gpustack.ai/amd-epyc-7r13": "true"}}),
	)

	It("leaves gpustack.ai/managed to the administrator when node-management-manual is on", func() {
		suite.Create(&workerv1.Setting{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace,
			Name: workerv1.SettingNodeManagementManual}, Spec: workerv1.SettingSpec{Value: "true"}}, epycNode("manual"))
		DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), workerFeature("manual", nil)) })
		r := &profiler.Reconciler{Client: suite.Client, Recorder: record.NewFakeRecorder(10)}
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "manual"}})
		Expect(err).NotTo(HaveOccurred())
		nf := &nfdv1alpha1.NodeFeature{}
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(workerFeature("manual", nil)), nf)).To(Succeed())
		Expect(nf.Spec.Labels).NotTo(HaveKey(workerv1.LabelManaged))
	})

	It("marks only the nodes without accelerators cpu-only when instance-type-mixed-on-node is off", func() {
		gpu := epycNode("mixed-off-gpu")
		gpu.Labels["acceleratable.feature.gpustack.ai/nvidia-a10g"] = "true"
		gpu.Labels["acceleratable.feature.gpustack.ai/nvidia-a10g.count"] = "1"
		suite.Create(&workerv1.Setting{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace,
			Name: workerv1.SettingInstanceTypeMixedOnNode}, Spec: workerv1.SettingSpec{Value: "false"}},
			epycNode("mixed-off-cpu"), gpu)
		r := &profiler.Reconciler{Client: suite.Client, Recorder: record.NewFakeRecorder(10)}
		for node, want := range map[string]map[string]string{
			"mixed-off-cpu": with(with(epyc, workerv1.LabelManaged, "true"), workerv1.LabelCPUOnly, "true"),
			"mixed-off-gpu": with(epyc, workerv1.LabelManaged, "true"),
		} {
			DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), workerFeature(node, nil)) })
			_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: node}})
			Expect(err).NotTo(HaveOccurred())
			nf := &nfdv1alpha1.NodeFeature{}
			Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(workerFeature(node, nil)), nf)).To(Succeed())
			Expect(cmp.Diff(want, nf.Spec.Labels)).To(BeEmpty(), "the worker labels of %s: -want, +got", node)
		}
	})

	It("deletes the Devices object of a node that is gone", func() {
		suite.Create(builders.MakeDevices("gone").Cards("nvidia", "NVIDIA A10G", 24576, 1).Obj())
		r := &profiler.Reconciler{Client: suite.Client, Recorder: record.NewFakeRecorder(10)}
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "gone"}})
		Expect(err).NotTo(HaveOccurred())
		err = suite.Client.Get(ctx, client.ObjectKey{Name: "gone"}, &workerv1.Devices{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Get of the Devices object says %v, want NotFound", err)
	})
})
