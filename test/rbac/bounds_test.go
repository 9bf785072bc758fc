package rbac_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"context"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/package/rbac"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// chartBounds renders the chart's component bounds (templates/bounds.yaml) for a release in the system namespace.
func chartBounds() []*unstructured.Unstructured {
	GinkgoHelper()
	return chartTemplate("templates/bounds.yaml")
}

// chartTemplate renders one template of the chart for a release in the system namespace.
func chartTemplate(template string) []*unstructured.Unstructured {
	GinkgoHelper()
	bin, skip, err := testenv.BinDir("helm")
	Expect(err).NotTo(HaveOccurred())
	if skip != "" {
		Skip(skip)
	}
	cmd := exec.Command(filepath.Join(bin, "helm"), "template", "gpustack-operator", testenv.Path("package", "helm", "gpustack-operator"),
		"--namespace", workerv1.SystemNamespace, "--kube-version", "1.36.3", "--show-only", template)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "helm template (make chart brings the subcharts): %s", stderr.String())
	var objs []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(out)), 4096)
	for {
		u := &unstructured.Unstructured{}
		err := d.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		Expect(err).NotTo(HaveOccurred())
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// createRoles creates the generated roles of the components, and the namespaces they live in (the device
// managers' as the other specs make it).
func createRoles(ctx context.Context, components ...string) {
	GinkgoHelper()
	for _, ns := range []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: workerv1.SystemNamespace}}, {ObjectMeta: metav1.ObjectMeta{Name: "kueue-system"}},
		{ObjectMeta: metav1.ObjectMeta{Name: gatewayv1.MembersNamespace}}, {ObjectMeta: metav1.ObjectMeta{Name: workerv1.DeviceManagerNamespace, Labels: devicemanager.NamespaceLabels}}} {
		Expect(client.IgnoreAlreadyExists(suite.Client.Create(ctx, ns))).To(Succeed())
	}
	for _, component := range components {
		objs, err := rbac.For(component, workerv1.SystemNamespace)
		Expect(err).NotTo(HaveOccurred())
		for _, o := range objs {
			Expect(client.IgnoreAlreadyExists(suite.Client.Create(ctx, o))).To(Succeed(), "cannot create %T %s", o, o.GetName())
		}
	}
}

// asComponent is a client that acts as a component's service account in the system namespace.
func asComponent(component string) client.Client {
	GinkgoHelper()
	cfg := rest.CopyConfig(suite.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + workerv1.SystemNamespace + ":" + rbac.ServiceAccountName(component),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + workerv1.SystemNamespace, "system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// The chart's component bounds, enforced by the real API server on top of the generated roles: writes that
// RBAC grants (create pods anywhere, patch any Pod) are refused where they leave the product's work. Every
// write is a dry run, so it passes authorization and admission and stores nothing.
var _ = Describe("the chart's component bounds", Ordered, func() {
	const users = "team-bounds"
	var worker, gateway client.Client
	var userPod, systemPod *corev1.Pod
	var node *corev1.Node
	BeforeAll(func(ctx context.Context) {
		Expect(client.IgnoreAlreadyExists(suite.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: users}}))).To(Succeed())
		createRoles(ctx, "worker", "worker-gateway")
		for _, o := range chartBounds() {
			Expect(suite.Client.Create(ctx, o)).To(Succeed(), "cannot create %s %s", o.GetKind(), o.GetName())
			DeferCleanup(func(ctx context.Context) { _ = suite.Client.Delete(ctx, o) })
		}
		worker, gateway = asComponent("worker"), asComponent("worker-gateway")
		userPod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: users, Name: "training"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.com/train:1"}}}}
		Expect(suite.Client.Create(ctx, userPod)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { _ = suite.Client.Delete(ctx, userPod) })
		systemPod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "gpu-monitor"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.com/monitor:1"}}}}
		Expect(suite.Client.Create(ctx, systemPod)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { _ = suite.Client.Delete(ctx, systemPod) })
		node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-bounds"}}
		Expect(suite.Client.Create(ctx, node)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { _ = suite.Client.Delete(ctx, node) })
		node.Status = corev1.NodeStatus{Capacity: corev1.ResourceList{"cpu": resource.MustParse("16"), "nvidia.com/gpu": resource.MustParse("4")},
			Allocatable: corev1.ResourceList{"cpu": resource.MustParse("16"), "nvidia.com/gpu": resource.MustParse("4")},
			Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "198.19.0.1"}},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
			Images:      []corev1.ContainerImage{{Names: []string{"example.com/train:1"}, SizeBytes: 1 << 30}},
			RuntimeHandlers: []corev1.NodeRuntimeHandler{{Name: "runc",
				Features: &corev1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: ptr.To(true), UserNamespaces: ptr.To(true)}}},
			Features: &corev1.NodeFeatures{SupplementalGroupsPolicy: ptr.To(true)}}
		Expect(suite.Client.Status().Update(ctx, node)).To(Succeed())
	})

	It("refuses the components what leaves the product's work", func(ctx context.Context) {
		rows := map[string]struct {
			write func() error
			want  string
		}{
			"the worker creates a Pod in kube-system": {
				write: func() error { return worker.Create(ctx, instancePod("kube-system"), client.DryRunAll) },
				want:  "the gpustack-operator never writes in kube-system, kube-public or kube-node-lease",
			},
			"the worker creates a Pod in a user's namespace that is no Instance's": {
				write: func() error { return worker.Create(ctx, plainPod(users), client.DryRunAll) },
				want:  "may not create Pod team-bounds/shell: the gpustack-operator creates only Instance Pods",
			},
			"the worker patches a Pod's image": {
				write: func() error { return patchImage(ctx, worker, userPod) },
				want:  "may not change Pod team-bounds/training: the gpustack-operator never changes the image or the security context of a container",
			},
			"the gateway patches a Pod's image": {
				write: func() error { return patchImage(ctx, gateway, userPod) },
				want:  "may not change Pod team-bounds/training",
			},
			"the worker deletes a Pod in kube-system": {
				write: func() error { return worker.Delete(ctx, systemPod.DeepCopy(), client.DryRunAll) },
				want:  "may not delete pods in kube-system: the gpustack-operator never writes in kube-system",
			},
			"the worker patches a Pod's image in kube-system": {
				write: func() error { return patchImage(ctx, worker, systemPod) },
				want:  "may not change Pod kube-system/gpu-monitor",
			},
			"the worker creates a Secret in kube-system": {
				write: func() error {
					return worker.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "keys"}}, client.DryRunAll)
				},
				want: "may not create secrets in kube-system: the gpustack-operator never writes in kube-system",
			},
			"the worker creates a service account token Secret in a user's namespace": {
				write: func() error {
					return worker.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: users, Name: "token",
						Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}}, Type: corev1.SecretTypeServiceAccountToken}, client.DryRunAll)
				},
				want: "may not write Secret team-bounds/token: the gpustack-operator makes no service account token",
			},
			"the gateway overwrites the settings Secret in Kueue's namespace": {
				write: func() error {
					return gateway.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kueue-system", Name: "gpustack-settings"}}, client.DryRunAll)
				},
				want: "may not create Secret kueue-system/gpustack-settings: the worker-gateway writes only its copies of the member kubeconfigs",
			},
			"the gateway stores the members' answers over the settings Secret": {
				write: func() error {
					return gateway.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: "gpustack-settings"}}, client.DryRunAll)
				},
				want: "may not create Secret gpustack-system/gpustack-settings: the worker-gateway writes only its copies",
			},
			"the gateway stores its serving certificate's Secret in Kueue's namespace": {
				write: func() error {
					return gateway.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kueue-system", Name: gatewayv1.ServingSecretName}}, client.DryRunAll)
				},
				want: "may not create Secret kueue-system/gpustack-operator-worker-gateway-tls: the worker-gateway writes only its copies",
			},
			"the worker moves a Node's address": {
				write: func() error {
					return patchNodeStatus(ctx, worker, node, func(st *corev1.NodeStatus) { st.Addresses[0].Address = "203.0.113.7" })
				},
				want: "may not change status.addresses of Node node-bounds",
			},
			"the worker changes a Node's cpu capacity": {
				write: func() error {
					return patchNodeStatus(ctx, worker, node, func(st *corev1.NodeStatus) { st.Capacity["cpu"] = resource.MustParse("1600") })
				},
				want: "may not change capacity of Node node-bounds but the counting keys",
			},
			"the worker takes a Node's cards": {
				write: func() error {
					return patchNodeStatus(ctx, worker, node, func(st *corev1.NodeStatus) { delete(st.Allocatable, "nvidia.com/gpu") })
				},
				want: "may not change allocatable of Node node-bounds",
			},
			"the worker claims a Node holds an image (the scheduler's image locality trusts it)": {
				write: func() error {
					return patchNodeStatus(ctx, worker, node, func(st *corev1.NodeStatus) {
						st.Images = append(st.Images, corev1.ContainerImage{Names: []string{"example.com/other:1"}, SizeBytes: 1})
					})
				},
				want: "may not change status.images of Node node-bounds",
			},
			"the worker gives a Node a runtime handler": {
				write: func() error {
					return patchNodeStatus(ctx, worker, node, func(st *corev1.NodeStatus) {
						st.RuntimeHandlers = append(st.RuntimeHandlers, corev1.NodeRuntimeHandler{Name: "nvidia"})
					})
				},
				want: "may not change status.runtimeHandlers of Node node-bounds",
			},
			"the worker changes a Node's features": {
				write: func() error {
					return patchNodeStatus(ctx, worker, node, func(st *corev1.NodeStatus) { st.Features.SupplementalGroupsPolicy = ptr.To(false) })
				},
				want: "may not change status.features of Node node-bounds",
			},
			"the worker marks a Node not Ready": {
				write: func() error {
					return patchNodeStatus(ctx, worker, node, func(st *corev1.NodeStatus) { st.Conditions[0].Status = corev1.ConditionFalse })
				},
				want: "may not change the conditions of Node node-bounds but GPUStackInventoryDisagrees",
			},
		}
		// The API server enforces a new policy once its informers hold it and its binding: until then a write
		// passes, and a dry run stores nothing.
		for name, r := range rows {
			Eventually(r.write).WithTimeout(time.Minute).Should(MatchError(ContainSubstring(r.want)), name)
		}
	})

	// The worker's cache lists and watches Secrets with a metadata.name field selector, which the API server
	// authorizes by name: gpustack-settings and nothing else of its namespace, Helm's release Secrets included.
	It("lets the worker list its settings Secret by name, and no other Secret", func(ctx context.Context) {
		list := &corev1.SecretList{}
		Expect(worker.List(ctx, list, client.InNamespace(workerv1.SystemNamespace), client.MatchingFields{"metadata.name": "gpustack-settings"})).To(Succeed())
		Expect(worker.List(ctx, list, client.InNamespace(workerv1.SystemNamespace))).To(MatchError(ContainSubstring("forbidden")))
		Expect(worker.List(ctx, list, client.InNamespace(workerv1.SystemNamespace),
			client.MatchingFields{"metadata.name": "sh.helm.release.v1.gpustack-operator.v1"})).To(MatchError(ContainSubstring("forbidden")))
	})

	It("lets the components do their work", func(ctx context.Context) {
		Expect(worker.Create(ctx, instancePod(users), client.DryRunAll)).To(Succeed(), "the worker creates an Instance Pod")
		p := userPod.DeepCopy()
		p.Annotations = map[string]string{"cards.gpustack.ai/example": "0"}
		Expect(worker.Patch(ctx, p, client.MergeFrom(userPod), client.DryRunAll)).To(Succeed(), "the worker annotates a Pod")
		Expect(gateway.Patch(ctx, p, client.MergeFrom(userPod), client.DryRunAll)).To(Succeed(), "the gateway annotates a Pod")
		// A Pod of kube-system that holds cards has them recorded by the ledger like any other.
		q := systemPod.DeepCopy()
		q.Annotations = map[string]string{"cards.gpustack.ai/example": "0"}
		Expect(worker.Patch(ctx, q, client.MergeFrom(systemPod), client.DryRunAll)).To(Succeed(), "the worker annotates a Pod in kube-system")
		member := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kueue-system", Name: "gpustack-member-member-a"}}
		Expect(gateway.Create(ctx, member, client.DryRunAll)).To(Succeed(), "the gateway copies a member's kubeconfig")
		serving := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: gatewayv1.ServingSecretName}}
		Expect(gateway.Create(ctx, serving, client.DryRunAll)).To(Succeed(), "the gateway's first replica stores its serving certificate")
		answers := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: gatewayv1.AnswersSecretName}}
		Expect(gateway.Create(ctx, answers, client.DryRunAll)).To(Succeed(), "the gateway keeps the members' last answers")
		Expect(patchNodeStatus(ctx, worker, node, func(st *corev1.NodeStatus) {
			st.Capacity["nvidia.com/gpu.sliced.units"] = resource.MustParse("40")
			st.Allocatable["nvidia.com/gpu.sliced.units"] = resource.MustParse("40")
			st.Conditions = append(st.Conditions, corev1.NodeCondition{Type: "GPUStackInventoryDisagrees", Status: corev1.ConditionTrue, Reason: "LabelsNotBacked"})
		})).To(Succeed(), "the worker writes a Node's counting keys and its inventory condition")
	})
})

// patchImage patches the image of a Pod's first container as c, a dry run.
func patchImage(ctx context.Context, c client.Client, pod *corev1.Pod) error {
	changed := pod.DeepCopy()
	changed.Spec.Containers[0].Image = "example.com/miner:1"
	return c.Patch(ctx, changed, client.MergeFrom(pod), client.DryRunAll)
}

// patchNodeStatus patches a Node's status as c, a dry run, with what edit changes of it.
func patchNodeStatus(ctx context.Context, c client.Client, node *corev1.Node, edit func(*corev1.NodeStatus)) error {
	changed := node.DeepCopy()
	edit(&changed.Status)
	return c.Status().Patch(ctx, changed, client.MergeFrom(node), client.DryRunAll)
}

// plainPod is a Pod of no Instance.
func plainPod(namespace string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "shell"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "sh", Image: "example.com/shell:1"}}}}
}

// instancePod is a Pod as the worker renders one: controlled by an Instance, sent to a pool's entrance queue.
func instancePod(namespace string) *corev1.Pod {
	p := plainPod(namespace)
	p.Name = "demo"
	p.Labels = map[string]string{workerv1.LabelQueueName: pools.EntranceName("gpustack--nvidia-tesla-t4-linux-amd64")}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: workerv1.GroupVersion.String(), Kind: "Instance", Name: "demo",
		UID: "3f1c0f4e-0000-4000-8000-000000000001", Controller: ptr.To(true)}}
	return p
}
