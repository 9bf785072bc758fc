package rbac_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"context"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/package/rbac"
)

// The node scope of the device managers and the CPU reporters, enforced by the real API server: an agent's token
// bound to node A (through a DaemonSet Pod on A, or to A itself) writes node A's Devices and NodeFeature and
// nothing of node B's; a reporter's writes only node A's cpu-info NodeFeature; a token bound to no node writes
// nothing.
var _ = Describe("the device managers' node scope", Ordered, func() {
	var (
		onA, podOnA, unbound, reporterOnA client.Client
		nodeA, nodeB                      *corev1.Node
	)
	BeforeAll(func(ctx context.Context) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workerv1.DeviceManagerNamespace, Labels: devicemanager.NamespaceLabels}}
		Expect(client.IgnoreAlreadyExists(suite.Client.Create(ctx, ns))).To(Succeed())
		objs, err := rbac.For("device-manager", workerv1.DeviceManagerNamespace)
		Expect(err).NotTo(HaveOccurred())
		reporter, err := rbac.For("cpu-info", workerv1.DeviceManagerNamespace)
		Expect(err).NotTo(HaveOccurred())
		objs = append(objs, reporter...)
		scope, err := rbac.NodeScope()
		Expect(err).NotTo(HaveOccurred())
		for _, o := range append(objs, scope...) {
			Expect(client.IgnoreAlreadyExists(suite.Client.Create(ctx, o))).To(Succeed(), "cannot create %T %s", o, o.GetName())
		}
		nodeA, nodeB = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}
		Expect(suite.Client.Create(ctx, nodeA)).To(Succeed())
		Expect(suite.Client.Create(ctx, nodeB)).To(Succeed())
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.DeviceManagerNamespace, Name: "agent-on-a"},
			Spec: corev1.PodSpec{NodeName: "node-a", ServiceAccountName: rbac.ServiceAccountName("device-manager"),
				Containers: []corev1.Container{{Name: "agent", Image: "agent"}}}}
		Expect(suite.Client.Create(ctx, pod)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			for _, o := range []client.Object{pod, nodeA, nodeB} {
				_ = suite.Client.Delete(ctx, o)
			}
		})
		boundToA := &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: nodeA.Name, UID: nodeA.UID}
		onA = accountClient(ctx, "device-manager", boundToA)
		podOnA = accountClient(ctx, "device-manager", &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID})
		unbound = accountClient(ctx, "device-manager", nil)
		reporterOnA = accountClient(ctx, "cpu-info", boundToA)
		// The API server enforces a new ValidatingAdmissionPolicy once its informers hold it and its binding: until
		// then a spec run first (the order is random) would see its write let through. A dry run writes nothing.
		Eventually(func(ctx context.Context) error {
			return onA.Create(ctx, &workerv1.Devices{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}, client.DryRunAll)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(MatchError(ContainSubstring("may write only that node's devices")))
	})
	devices := func(node string) *workerv1.Devices {
		return &workerv1.Devices{ObjectMeta: metav1.ObjectMeta{Name: node}}
	}
	feature := func(name, node string) *nfdv1alpha1.NodeFeature {
		return &nfdv1alpha1.NodeFeature{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: name,
			Labels: map[string]string{nfdv1alpha1.NodeFeatureObjNodeNameLabel: node}}}
	}
	slice := func(node, driver string) *resourceapi.ResourceSlice {
		return &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{GenerateName: node + "-" + driver + "-"},
			Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: ptr.To(node), Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1},
				Devices: []resourceapi.Device{{Name: "card-0"}}}}
	}
	cleanup := func(o client.Object) { DeferCleanup(func(ctx context.Context) { _ = suite.Client.Delete(ctx, o) }) }

	It("lets the agent of a node write that node's inventory, with a Pod's token or a node's", func(ctx context.Context) {
		for name, c := range map[string]client.Client{"a token bound to node-a": onA, "the token of a Pod on node-a": podOnA} {
			d := devices("node-a")
			Expect(c.Create(ctx, d)).To(Succeed(), name)
			cleanup(d)
			d.Labels = map[string]string{"updated": "yes"}
			Expect(c.Update(ctx, d)).To(Succeed(), name)
			Expect(c.Delete(ctx, d)).To(Succeed(), name)
			nf := feature(workerv1.NodeFeatureName("node-a", workerv1.NodeFeatureDeviceManager), "node-a")
			Expect(c.Create(ctx, nf)).To(Succeed(), name)
			cleanup(nf)
			nf.Spec.Labels = map[string]string{"feature.gpustack.ai/updated": "yes"}
			Expect(c.Update(ctx, nf)).To(Succeed(), name)
			Expect(suite.Client.Delete(ctx, nf)).To(Succeed())
			rs := slice("node-a", "nvidia.gpustack.ai")
			Expect(c.Create(ctx, rs)).To(Succeed(), name)
			cleanup(rs)
			rs.Spec.Devices = append(rs.Spec.Devices, resourceapi.Device{Name: "card-1"})
			Expect(c.Update(ctx, rs)).To(Succeed(), name)
			Expect(c.Delete(ctx, rs)).To(Succeed(), name)
		}
	})
	It("lets the CPU reporter of a node write that node's cpu-info NodeFeature, and nothing else", func(ctx context.Context) {
		nf := feature(workerv1.NodeFeatureName("node-a", workerv1.NodeFeatureCPUInfo), "node-a")
		Expect(reporterOnA.Create(ctx, nf)).To(Succeed())
		cleanup(nf)
		nf.Spec.Labels = map[string]string{"feature.gpustack.ai/updated": "yes"}
		Expect(reporterOnA.Update(ctx, nf)).To(Succeed())
		Expect(reporterOnA.Create(ctx, feature(workerv1.NodeFeatureName("node-a", workerv1.NodeFeatureDeviceManager), "node-a"))).To(MatchError(ContainSubstring(
			"may write only that node's nodefeatures (node-a-gpustack-cpu-info, labelled")), "the device manager's NodeFeature")
		Expect(reporterOnA.Create(ctx, feature(workerv1.NodeFeatureName("node-b", workerv1.NodeFeatureCPUInfo), "node-b"))).To(MatchError(ContainSubstring(
			"may write only that node's nodefeatures")), "another node's")
		Expect(reporterOnA.Create(ctx, devices("node-a"))).To(MatchError(ContainSubstring("forbidden")), "a Devices object: RBAC grants none")
	})
	It("refuses the agent of a node another node's inventory", func(ctx context.Context) {
		for name, c := range map[string]client.Client{"a token bound to node-a": onA, "the token of a Pod on node-a": podOnA} {
			Expect(c.Create(ctx, devices("node-b"))).To(MatchError(ContainSubstring("the device manager of node node-a may write only that node's devices")), name)
			Expect(c.Create(ctx, feature(workerv1.NodeFeatureName("node-b", workerv1.NodeFeatureDeviceManager), "node-b"))).To(MatchError(ContainSubstring("may write only that node's nodefeatures")), name)
			Expect(c.Create(ctx, feature(workerv1.NodeFeatureName("node-a", workerv1.NodeFeatureCPUInfo), "node-a"))).To(MatchError(ContainSubstring(
				"(node-a-gpustack-device-manager, labelled")), "%s: the CPU reporter's NodeFeature", name)
			Expect(c.Create(ctx, feature("node-a-gpustack-worker", "node-a"))).To(MatchError(ContainSubstring("may write only that node's nodefeatures")),
				"%s: the worker's NodeFeature of its own node", name)
			Expect(c.Create(ctx, feature(workerv1.NodeFeatureName("node-a", workerv1.NodeFeatureDeviceManager), "node-b"))).To(MatchError(ContainSubstring("labelled nfd.node.kubernetes.io/node-name=node-a")),
				"%s: its own NodeFeature applied to another node", name)
		}
		for name, c := range map[string]client.Client{"a token bound to node-a": onA, "the token of a Pod on node-a": podOnA} {
			Expect(c.Create(ctx, slice("node-b", "nvidia.gpustack.ai"))).To(MatchError(ContainSubstring(
				"may write only that node's resourceslices (spec.nodeName node-a, a driver *.gpustack.ai)")), "%s: another node's slice", name)
			Expect(c.Create(ctx, slice("node-a", "gpu.nvidia.com"))).To(MatchError(ContainSubstring(
				"may write only that node's resourceslices")), "%s: another driver's slice of its own node", name)
		}
		theirs := devices("node-b")
		Expect(suite.Client.Create(ctx, theirs)).To(Succeed())
		cleanup(theirs)
		Expect(onA.Delete(ctx, theirs)).To(MatchError(ContainSubstring("may write only that node's devices")))
	})
	It("refuses a token bound to no node", func(ctx context.Context) {
		Expect(unbound.Create(ctx, devices("node-a"))).To(MatchError(ContainSubstring("bound to no node")))
	})
})

// accountClient returns a client that sends a token of a component's service account in the agents'
// namespace, bound to ref (none when nil).
func accountClient(ctx context.Context, component string, ref *authenticationv1.BoundObjectReference) client.Client {
	GinkgoHelper()
	cs, err := kubernetes.NewForConfig(suite.Config)
	Expect(err).NotTo(HaveOccurred())
	token, err := cs.CoreV1().ServiceAccounts(workerv1.DeviceManagerNamespace).CreateToken(ctx, rbac.ServiceAccountName(component),
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600), BoundObjectRef: ref}},
		metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	cfg := rest.AnonymousClientConfig(suite.Config)
	cfg.BearerToken = token.Status.Token
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
	return c
}
