package composer_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/composer"
	"github.com/gpustack/gpustack-operator/internal/kueueconfig"
	"github.com/gpustack/gpustack-operator/test/framework/walkthrough"
)

// A stock Kueue's queues never admit an accelerated Instance. The worker reads Kueue's configuration from its
// ConfigMap and every InstanceType says what it lacks, with a Warning event when it turns so; once the
// configuration carries it, the condition turns True.
var _ = It("says on every InstanceType what the running Kueue's configuration lacks", func(ctx context.Context) {
	suite.Create(profiledNodes("walkthrough.yaml")...)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workerv1.KueueNamespace}}
	Expect(client.IgnoreAlreadyExists(suite.Client.Create(ctx, ns))).To(Succeed())
	stock := "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nintegrations:\n  frameworks: [batch/job]\n"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.KueueNamespace, Name: kueueconfig.ConfigMap},
		Data: map[string]string{kueueconfig.ConfigKey: stock}}
	suite.Create(cm)
	parsed, err := kueueconfig.Parse([]byte(stock))
	Expect(err).NotTo(HaveOccurred())

	watch := &kueueconfig.Watch{Reader: suite.Client, Log: logr.Discard()}
	events := record.NewFakeRecorder(100)
	r := &composer.Reconciler{Client: suite.Client, Recorder: events, Kueue: watch}
	recompute := func() {
		GinkgoHelper()
		for range 2 { // the first recompute creates the derived types, the next gives them their status
			_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "chain"}})
			Expect(err).NotTo(HaveOccurred())
		}
	}
	t4 := walkthrough.Step1Types[3][0]
	configured := func() metav1.Condition {
		GinkgoHelper()
		it := &workerv1.InstanceType{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: t4}, it)).To(Succeed())
		c := apimeta.FindStatusCondition(it.Status.Conditions, composer.ConditionKueueConfigured)
		Expect(c).NotTo(BeNil(), "InstanceType %s has no %s condition", t4, composer.ConditionKueueConfigured)
		return *c
	}

	watch.Check(ctx)
	recompute()
	Expect(configured()).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", composer.ReasonKueueMisconfigured),
		HaveField("Message", HavePrefix(`the queues will not admit: integrations.frameworks lacks "pod"; resources.excludeResourcePrefixes lacks`)),
		HaveField("Message", HaveSuffix(fmt.Sprintf("(and %d more)", len(kueueconfig.Check(parsed))-3)))))
	Expect(events.Events).To(Receive(HavePrefix("Warning KueueMisconfigured the queues will not admit")))

	required, err := kueueconfig.Required()
	Expect(err).NotTo(HaveOccurred())
	cm.Data[kueueconfig.ConfigKey] = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n" + string(required)
	Expect(suite.Client.Update(ctx, cm)).To(Succeed())
	watch.Check(ctx)
	recompute()
	Expect(configured()).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", composer.ReasonKueueConfigured)))

	Expect(suite.Client.Delete(ctx, cm)).To(Succeed())
	watch.Check(ctx)
	recompute()
	Expect(configured().Message).To(ContainSubstring("ConfigMap kueue-system/kueue-manager-config is not there"))
})

// The worker reads Kueue's configuration again as soon as it changes: with a watch, a change shows long before the
// interval's read (an hour here).
var _ = It("reads Kueue's configuration again when it changes", func(ctx context.Context) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workerv1.KueueNamespace}}
	Expect(client.IgnoreAlreadyExists(suite.Client.Create(ctx, ns))).To(Succeed())
	required, err := kueueconfig.Required()
	Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.KueueNamespace, Name: kueueconfig.ConfigMap},
		Data: map[string]string{kueueconfig.ConfigKey: "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n" + string(required)}}
	suite.Create(cm)

	changes := make(chan struct{}, 10)
	watch := &kueueconfig.Watch{Reader: suite.Client, Watcher: suite.Client, Every: time.Hour, Log: logr.Discard(),
		Changed: func() { changes <- struct{}{} }}
	watchCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- watch.Start(watchCtx) }()
	DeferCleanup(func() { stop(); Expect(<-done).To(Succeed()) })
	Eventually(changes).Should(Receive(), "the first read")
	problems, _ := watch.Problems()
	Expect(problems).To(BeEmpty())

	cm.Data[kueueconfig.ConfigKey] = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nintegrations:\n  frameworks: [batch/job]\n"
	Expect(suite.Client.Update(ctx, cm)).To(Succeed())
	Eventually(changes, 30*time.Second).Should(Receive(), "the read the change wakes")
	problems, _ = watch.Problems()
	Expect(problems).To(ContainElement(`integrations.frameworks lacks "pod"`))
})
