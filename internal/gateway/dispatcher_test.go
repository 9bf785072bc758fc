package gateway_test

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/gateway"
	"github.com/gpustack/gpustack-operator/pools"
)

// The dispatcher on a real API server with Kueue's CRDs (the manager) and a member: it writes what MultiKueue
// needs for the member's Active types, nothing before the gateway has read the members, keeps a type the member
// holds, and keeps everything while the member's Secret is made again and the gateway restarts with the member
// unreachable; what no member offers goes only after the retention.
var _ = Describe("the worker-gateway's dispatch", Ordered, func() {
	const namespace = "gateway-dispatch"
	ctx := context.Background()
	var member *memberCluster
	var d *gateway.Dispatcher
	var stopGateway func()

	// startGateway starts a gateway with a fresh memory, as a restarted one; its dispatcher is d.
	startGateway := func() {
		gw := &gateway.Gateway{Client: suite.Client, Namespace: namespace, Scheme: scheme.New(),
			Interval: 200 * time.Millisecond, Timeout: time.Second, Log: logr.Discard()}
		d = &gateway.Dispatcher{Client: suite.Client, Gateway: gw, Namespace: namespace, KueueNamespace: "kueue-system",
			Interval: 200 * time.Millisecond, Retention: time.Hour, FirstAnswerGrace: 2 * time.Second, Log: logr.Discard()}
		runCtx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = gw.Run(runCtx)
		}()
		stopGateway = func() {
			cancel()
			<-done
		}
	}
	// kept reports whether the object is on the manager, marked as no longer offered.
	kept := func(g Gomega, key client.ObjectKey, o client.Object) string {
		g.Expect(suite.Client.Get(ctx, key, o)).To(Succeed(), "%T %s", o, key)
		mark := o.GetAnnotations()[gatewayv1.AnnotationUnwantedSince]
		g.Expect(mark).NotTo(BeEmpty(), "%T %s is marked", o, key)
		return mark
	}
	memberSecret := func() *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "member-d",
			Labels: map[string]string{gatewayv1.LabelMember: "true"}}, Data: map[string][]byte{gatewayv1.KubeconfigKey: member.kubeconfig}}
	}

	BeforeAll(func() {
		for _, ns := range []string{namespace, "kueue-system"} {
			err := suite.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
		}
		member = startMemberIn(suite.Client, namespace, "member-d")
		member.instanceType("gpu-d", true, 2, 3, 4, workerv1.InstanceTypeActive)
		member.instanceType("old-d", true, 1, 1, 1, workerv1.InstanceTypeDraining)
		startGateway()
		DeferCleanup(func() { stopGateway() })

		// What a previous run wrote stays while the gateway has not read the members: no members read is not no
		// members.
		earlier := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "gpu-d", Labels: map[string]string{gatewayv1.LabelDispatch: "true"}}}
		Expect(suite.Client.Create(ctx, earlier)).To(Succeed())
		Expect(d.Sync(ctx)).To(Succeed())
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(earlier), &kueue.ClusterQueue{})).To(Succeed())
	})

	It("writes MultiKueue's cluster and, per Active type, the mirrored type, its queue, check, config and entrances", func() {
		it := &workerv1.InstanceType{}
		Eventually(func(g Gomega) {
			g.Expect(d.Sync(ctx)).To(Succeed())
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "gpu-d"}, it)).To(Succeed())
			g.Expect(it.Status.Phase).To(Equal(workerv1.InstanceTypeActive))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(it.Labels).To(HaveKeyWithValue(gatewayv1.LabelDispatch, "true"))
		Expect(it.Status.PhaseMessage).To(Equal("dispatched through MultiKueue to member-d"))
		Expect(it.Status.Accelerator.Capacity.Value()).To(BeEquivalentTo(4))
		Expect(it.Status.Entrance).To(Equal(pools.EntranceName("gpu-d")))

		secret := &corev1.Secret{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: "kueue-system", Name: "gpustack-member-member-d"}, secret)).To(Succeed())
		// The copy holds what the gateway checked of the member's kubeconfig, nothing else.
		copied, err := gateway.ParseMemberKubeconfig(secret.Data["kubeconfig"])
		Expect(err).NotTo(HaveOccurred())
		checked, err := gateway.ParseMemberKubeconfig(member.kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		Expect(copied).To(Equal(checked))
		cluster := &kueue.MultiKueueCluster{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "member-d"}, cluster)).To(Succeed())
		Expect(cluster.Spec.ClusterSource.KubeConfig.Location).To(Equal(secret.Name))
		config := &kueue.MultiKueueConfig{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "gpu-d"}, config)).To(Succeed())
		Expect(config.Spec.Clusters).To(Equal([]string{"member-d"}))
		check := &kueue.AdmissionCheck{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "gpustack-multikueue-gpu-d"}, check)).To(Succeed())
		Expect(check.Spec.ControllerName).To(Equal(kueue.MultiKueueControllerName))
		cq := &kueue.ClusterQueue{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "gpu-d"}, cq)).To(Succeed())
		Expect(cq.Spec.AdmissionChecksStrategy.AdmissionChecks).To(HaveLen(1))
		Expect(string(cq.Spec.AdmissionChecksStrategy.AdmissionChecks[0].Name)).To(Equal(check.Name))
		Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: it.Status.Entrance}, &kueue.LocalQueue{})).To(Succeed())
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "old-d"}, &workerv1.InstanceType{})).To(Satisfy(apierrors.IsNotFound),
			"a draining type is not dispatched")
	})

	It("keeps a type the member holds, Inactive, with the member in its config", func() {
		setPhase := func(phase workerv1.InstanceTypePhase) {
			mit := &workerv1.InstanceType{}
			Expect(member.client.Get(ctx, client.ObjectKey{Name: "gpu-d"}, mit)).To(Succeed())
			mit.Status.Phase = phase
			Expect(member.client.Status().Update(ctx, mit)).To(Succeed())
		}
		setPhase(workerv1.InstanceTypeInactive)
		it := &workerv1.InstanceType{}
		Eventually(func(g Gomega) {
			g.Expect(d.Sync(ctx)).To(Succeed())
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "gpu-d"}, it)).To(Succeed())
			g.Expect(it.Status.Phase).To(Equal(workerv1.InstanceTypeInactive))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(it.Status.PhaseMessage).To(ContainSubstring("member-d (Inactive)"))
		config := &kueue.MultiKueueConfig{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "gpu-d"}, config)).To(Succeed())
		Expect(config.Spec.Clusters).To(Equal([]string{"member-d"}))

		setPhase(workerv1.InstanceTypeActive)
		Eventually(func(g Gomega) {
			g.Expect(d.Sync(ctx)).To(Succeed())
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "gpu-d"}, it)).To(Succeed())
			g.Expect(it.Status.Phase).To(Equal(workerv1.InstanceTypeActive))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	// The member's worker notes on the Service it made for a dispatched Instance where the Instance is reached
	// there; the dispatcher passes the note on to the manager's Pod of the Workload MultiKueue placed on that
	// member, which the manager's Instance shows.
	It("passes on to the manager's Pod where the member that runs it says its Instance is reached", func() {
		access := `{"addresses":["10.0.0.5"],"ports":[{"port":22,"protocol":"TCP","name":"ssh","nodePort":30022}]}`
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "reached",
			Labels:      map[string]string{kueue.MultiKueueOriginLabel: "multikueue"},
			Annotations: map[string]string{workerv1.AnnotationInstanceAccess: access}},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "ssh", Port: 22}}}}
		Expect(member.client.Create(ctx, svc)).To(Succeed())
		DeferCleanup(func() { _ = member.client.Delete(context.Background(), svc) })

		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "reached"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
		Expect(suite.Client.Create(ctx, pod)).To(Succeed())
		DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), pod) })
		wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pod-reached",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}},
			Spec: kueue.WorkloadSpec{QueueName: "q", PodSets: []kueue.PodSet{{Name: "main", Count: 1,
				Template: corev1.PodTemplateSpec{Spec: pod.Spec}}}}}
		Expect(suite.Client.Create(ctx, wl)).To(Succeed())
		DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), wl) })
		// MultiKueue placed it on member-d: its check passed and the cluster is named.
		wl.Status.ClusterName = ptr.To("member-d")
		wl.Status.AdmissionChecks = []kueue.AdmissionCheckState{{Name: "gpustack-multikueue-gpu-d", State: kueue.CheckStateReady,
			LastTransitionTime: metav1.Now(), Message: `The workload got reservation on "member-d"`}}
		Expect(suite.Client.Status().Update(ctx, wl)).To(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(d.Sync(ctx)).To(Succeed())
			got := &corev1.Pod{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(pod), got)).To(Succeed())
			g.Expect(got.Annotations).To(HaveKeyWithValue(gatewayv1.AnnotationMemberAccess, access))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("keeps everything, marked, while the member's Secret is made again and the gateway restarts with the member unreachable", func() {
		Expect(suite.Client.Delete(ctx, memberSecret())).To(Succeed())
		var since string
		Eventually(func(g Gomega) {
			g.Expect(d.Sync(ctx)).To(Succeed())
			it := &workerv1.InstanceType{}
			since = kept(g, client.ObjectKey{Name: "gpu-d"}, it)
			g.Expect(it.Status.Phase).To(Equal(workerv1.InstanceTypeInactive))
			g.Expect(it.Status.PhaseMessage).To(HavePrefix("no member offers it since " + since))
			kept(g, client.ObjectKey{Name: "member-d"}, &kueue.MultiKueueCluster{})
			kept(g, client.ObjectKey{Name: "gpu-d"}, &kueue.MultiKueueConfig{})
			kept(g, client.ObjectKey{Name: "gpu-d"}, &kueue.ClusterQueue{})
			// The copy of its kubeconfig stays with its cluster, unmarked: the gateway may not read Secrets there.
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: "kueue-system", Name: "gpustack-member-member-d"}, &corev1.Secret{})).To(Succeed())
		}).WithTimeout(30 * time.Second).Should(Succeed())

		// The gateway restarts, its memory gone, while the member answers nothing; its Secret is back.
		stopGateway()
		member.proxy.cut()
		Expect(suite.Client.Create(ctx, memberSecret())).To(Succeed())
		startGateway()
		time.Sleep(3 * time.Second) // past the first-answer grace: the dispatcher writes without the member's answer
		Consistently(func(g Gomega) {
			g.Expect(d.Sync(ctx)).To(Succeed())
			g.Expect(kept(g, client.ObjectKey{Name: "gpu-d"}, &workerv1.InstanceType{})).To(Equal(since), "the mark outlives the restart")
			config := &kueue.MultiKueueConfig{}
			kept(g, client.ObjectKey{Name: "gpu-d"}, config)
			g.Expect(config.Spec.Clusters).To(Equal([]string{"member-d"}))
			cluster := &kueue.MultiKueueCluster{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "member-d"}, cluster)).To(Succeed())
		}).WithTimeout(3 * time.Second).Should(Succeed())

		// The member answers again: it takes its type back.
		member.proxy.restore()
		Eventually(func(g Gomega) {
			g.Expect(d.Sync(ctx)).To(Succeed())
			for _, o := range []client.Object{&workerv1.InstanceType{}, &kueue.MultiKueueConfig{}, &kueue.MultiKueueCluster{}} {
				key := client.ObjectKey{Name: "gpu-d"}
				if _, ok := o.(*kueue.MultiKueueCluster); ok {
					key.Name = "member-d"
				}
				g.Expect(suite.Client.Get(ctx, key, o)).To(Succeed())
				g.Expect(o.GetAnnotations()).NotTo(HaveKey(gatewayv1.AnnotationUnwantedSince), "%T", o)
			}
			it := &workerv1.InstanceType{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "gpu-d"}, it)).To(Succeed())
			g.Expect(it.Status.Phase).To(Equal(workerv1.InstanceTypeActive))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("removes a type's objects once no member has offered it for the retention", func() {
		d.Retention = 2 * time.Second
		Expect(member.client.Delete(ctx, &workerv1.InstanceType{ObjectMeta: metav1.ObjectMeta{Name: "gpu-d"}})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(d.Sync(ctx)).To(Succeed())
			for _, o := range []client.Object{&workerv1.InstanceType{}, &kueue.ClusterQueue{}, &kueue.MultiKueueConfig{}} {
				g.Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "gpu-d"}, o)).To(Satisfy(apierrors.IsNotFound), "%T", o)
			}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: pools.EntranceName("gpu-d")}, &kueue.LocalQueue{})).
				To(Satisfy(apierrors.IsNotFound))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		cluster := &kueue.MultiKueueCluster{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "member-d"}, cluster)).To(Succeed(), "the member stays")
		Expect(cluster.Annotations).NotTo(HaveKey(gatewayv1.AnnotationUnwantedSince))
	})

	It("removes a member's cluster and the copy of its kubeconfig once its Secret has been gone for the retention", func() {
		d.Retention = 2 * time.Second
		Expect(suite.Client.Delete(ctx, memberSecret())).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(d.Sync(ctx)).To(Succeed())
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "member-d"}, &kueue.MultiKueueCluster{})).To(Satisfy(apierrors.IsNotFound))
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: "kueue-system", Name: "gpustack-member-member-d"}, &corev1.Secret{})).
				To(Satisfy(apierrors.IsNotFound))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})
})
