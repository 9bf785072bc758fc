package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	settingsv1 "github.com/gpustack/gpustack-operator/apis/settings/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/kueueconfig"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/realnode"
)

// Checks that every kind of the API is served with its scope and short name.
var _ = It("checks that every kind of the API is served with its scope and short name", func() {
	cs, err := cluster.Clientset()
	Expect(err).NotTo(HaveOccurred())
	list, err := cs.Discovery().ServerResourcesForGroupVersion(workerv1.GroupVersion.String())
	Expect(err).NotTo(HaveOccurred())
	type kind struct {
		Namespaced bool
		ShortNames string
	}
	got := map[string]kind{}
	for _, r := range list.APIResources {
		if !strings.Contains(r.Name, "/") {
			got[r.Kind] = kind{r.Namespaced, strings.Join(r.ShortNames, ",")}
		}
	}
	want := map[string]kind{
		"InstanceType": {false, "instype"}, "InstanceTypeFlavor": {false, "instypeflavor"},
		"Instance": {true, "inst"}, "InstancePersistentVolume": {true, "instpv"},
		"InstancePersistentVolumeType": {false, "instpvtype"}, "InstanceSSHPublicKey": {true, "instsshkey"},
		"InstanceImagePullSecret": {true, "instpullsecret"},
		// The stored Settings leave set to the served ones, settings.gpustack.ai's.
		"Devices": {false, "devs"}, "Setting": {true, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		Fail(fmt.Sprintf("worker.gpustack.ai/v1 kinds: -want, +got:\n%s", diff))
	}
	list, err = cs.Discovery().ServerResourcesForGroupVersion(settingsv1.GroupVersion.String())
	Expect(err).NotTo(HaveOccurred())
	Expect(list.APIResources).To(ContainElement(SatisfyAll(HaveField("Name", "settings"), HaveField("Kind", "Setting"),
		HaveField("Namespaced", true), HaveField("ShortNames", []string{"set"}))), "settings.gpustack.ai/v1")
})

// Runs the real Kueue: a Pod asking for one NVIDIA card is charged 1,600,000
// credits.gpustack.ai/nvidia, admitted against a queue of exactly that quota and run by a node's kubelet with
// the card its device plugin grants; a second one waits for quota.
var _ = It("runs the real Kueue", func() {
	ctx := context.Background()
	rf := &kueuev1beta2.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "e2e-credits"}}
	cq := &kueuev1beta2.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "e2e-credits"},
		Spec: kueuev1beta2.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{},
			ResourceGroups: []kueuev1beta2.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{"credits.gpustack.ai/nvidia"},
				Flavors: []kueuev1beta2.FlavorQuotas{{Name: "e2e-credits", Resources: []kueuev1beta2.ResourceQuota{{
					Name: "credits.gpustack.ai/nvidia", NominalQuota: resource.MustParse("1600k")}}}},
			}},
		}}
	lq := &kueuev1beta2.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "e2e-credits"},
		Spec: kueuev1beta2.LocalQueueSpec{ClusterQueue: "e2e-credits"}}
	for _, o := range []client.Object{rf, cq, lq} {
		Expect(k.Create(ctx, o)).To(Succeed())
	}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name,
				Labels: map[string]string{"kueue.x-k8s.io/queue-name": "e2e-credits"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: realnode.UserImage, Command: []string{"sleep", "infinity"},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
		}
	}
	first, second := pod("e2e-first"), pod("e2e-second")
	// The queue and flavor are gone before the next spec: Kueue keeps them (its resource-in-use finalizer) until
	// their Workloads are, and a spec that lists the cluster's queues must not see them.
	DeferCleanup(func(ctx context.Context) {
		for _, o := range []client.Object{first, second, lq, cq, rf} {
			_ = k.Delete(ctx, o)
		}
		Eventually(func() bool {
			return apierrors.IsNotFound(k.Get(ctx, client.ObjectKeyFromObject(cq), &kueuev1beta2.ClusterQueue{})) &&
				apierrors.IsNotFound(k.Get(ctx, client.ObjectKeyFromObject(rf), &kueuev1beta2.ResourceFlavor{}))
		}).WithTimeout(2*time.Minute).Should(BeTrue(), "the e2e-credits queue and flavor are not gone")
	})
	Expect(k.Create(ctx, first)).To(Succeed())
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := k.Get(ctx, client.ObjectKeyFromObject(first), first)
		return err == nil && first.Status.Phase == corev1.PodRunning, nil
	}); err != nil {
		Fail(fmt.Sprintf("the first Pod did not run: phase %q, gates %v", first.Status.Phase, first.Spec.SchedulingGates))
	}
	Expect(k.Create(ctx, second)).To(Succeed())
	// The second Pod must stay gated: its 1,600,000 credits exceed what is left of the quota.
	time.Sleep(3 * time.Second)
	Expect(k.Get(ctx, client.ObjectKeyFromObject(second), second)).To(Succeed())
	if len(second.Spec.SchedulingGates) == 0 || second.Status.Phase == corev1.PodRunning {
		Fail(fmt.Sprintf("the second Pod got through a full queue: phase %q, gates %v", second.Status.Phase, second.Spec.SchedulingGates))
	}
})

// Checks that nfd-master turns a NodeFeature's labels into Node labels.
var _ = It("checks that nfd-master turns a NodeFeature's labels into Node labels", func() {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workerv1.SystemNamespace}}
	if err := k.Create(ctx, ns); err != nil && !strings.Contains(err.Error(), "already exists") {
		Expect(err).NotTo(HaveOccurred())
	}
	nf := &nfdv1alpha1.NodeFeature{
		ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: "node-cpu-e2e",
			Labels: map[string]string{"nfd.node.kubernetes.io/node-name": "node-cpu"}},
		Spec: nfdv1alpha1.NodeFeatureSpec{Labels: map[string]string{"e2e.feature.gpustack.ai/probe": "true"}},
	}
	Expect(k.Create(ctx, nf)).To(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), nf) })
	node := &corev1.Node{}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := k.Get(ctx, client.ObjectKey{Name: "node-cpu"}, node)
		return err == nil && node.Labels["e2e.feature.gpustack.ai/probe"] == "true", nil
	}); err != nil {
		Fail(fmt.Sprintf("the NodeFeature label did not reach node-cpu: %v", node.Labels))
	}
})

// Checks that the worker read the chart's Kueue configuration from its ConfigMap (in the release's namespace,
// where the chart runs Kueue) and found what the operator needs: every InstanceType says KueueConfigured True.
var _ = It("checks the running Kueue's configuration and says so on every InstanceType", func() {
	eventually(time.Minute, func() (bool, string) {
		got := kubectl("get", "instancetype", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="KueueConfigured")].status} {end}`)
		return got == strings.Repeat("True ", len(step1Types)-1), "KueueConfigured of each InstanceType: " + got
	})
})

// With a stock Kueue configuration (no credit transformations, no Pod integration) no accelerated Instance would
// ever be admitted: the worker reads it from Kueue's ConfigMap as it changes and says on every
// InstanceType what is missing, with a Warning event, then True again once the configuration is restored.
var _ = It("says on every InstanceType what a stock Kueue configuration lacks", func(ctx context.Context) {
	cm := &corev1.ConfigMap{}
	Expect(k.Get(ctx, client.ObjectKey{Namespace: localcluster.ChartNamespace, Name: kueueconfig.ConfigMap}, cm)).To(Succeed())
	configured := cm.Data[kueueconfig.ConfigKey]
	set := func(ctx context.Context, config string) {
		GinkgoHelper()
		Expect(k.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
		cm.Data[kueueconfig.ConfigKey] = config
		Expect(k.Update(ctx, cm)).To(Succeed())
	}
	set(ctx, "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nintegrations:\n  frameworks: [batch/job]\n")
	// The cleanup gets its own context: the spec's ends with the spec.
	DeferCleanup(func(ctx context.Context) { set(ctx, configured) })
	conditions := func(field string) string {
		return kubectl("get", "instancetype", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="KueueConfigured")].`+field+`}{"\n"}{end}`)
	}
	eventually(2*time.Minute, func() (bool, string) {
		got := conditions("reason")
		return got == strings.Repeat("KueueMisconfigured\n", len(step1Types)-1), "KueueConfigured reasons: " + got
	})
	Expect(conditions("message")).To(HavePrefix(`the queues will not admit: integrations.frameworks lacks "pod"; `))
	eventually(time.Minute, func() (bool, string) {
		got := kubectl("get", "events", "-A", "--field-selector", "reason=KueueMisconfigured,involvedObject.kind=InstanceType",
			"-o", "custom-columns=TYPE:.type,OBJECT:.involvedObject.name", "--no-headers")
		return strings.Count(got, "Warning") >= len(step1Types)-1, "the Warning events: " + got
	})
	set(ctx, configured)
	eventually(2*time.Minute, func() (bool, string) {
		got := conditions("status")
		return got == strings.Repeat("True\n", len(step1Types)-1), "KueueConfigured once restored: " + got
	})
})
