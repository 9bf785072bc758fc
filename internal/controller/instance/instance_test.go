package instance_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads as prose.
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads as prose.
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/instance"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.EnvtestSuite

func TestInstance(t *testing.T) { testenv.RunSuite(t, "instance controller suite", &suite) }

// reconcileOnce runs one reconcile of the Instance and returns the Instance and its Pod (nil when none) as
// they stand after it, with the events it recorded.
func reconcileOnce(inst *workerv1.Instance) (*workerv1.Instance, *corev1.Pod, []string) {
	GinkgoHelper()
	ctx := context.Background()
	events := record.NewFakeRecorder(10)
	r := &instance.Reconciler{Client: suite.Client, Recorder: events}
	_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(inst)})
	Expect(err).NotTo(HaveOccurred())
	got := &workerv1.Instance{}
	Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(inst), got)).To(Succeed())
	pod := &corev1.Pod{}
	if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(inst), pod); err != nil {
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Get of the Pod: %v", err)
		pod = nil
	} else {
		DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), pod) })
	}
	close(events.Events)
	var recorded []string
	for e := range events.Events {
		recorded = append(recorded, e)
	}
	return got, pod, recorded
}

var _ = DescribeTable("stops an Instance, before creating its Pod, only when its queue drains",
	func(policy kueue.StopPolicy, wantStopped bool) {
		name := "drain-" + strings.ToLower(string(policy))
		typ := builders.MakeInstanceType(name).Obj()
		cq := builders.MakeClusterQueue(typ.Name).StopPolicy(policy).Obj()
		inst := builders.MakeInstance("default", name, typ.Name).Obj()
		suite.Create(typ, cq, inst)

		got, pod, events := reconcileOnce(inst)
		Expect(got.Spec.Stop).To(Equal(wantStopped), "spec.stop")
		if wantStopped {
			Expect(pod).To(BeNil(), "a stopped Instance has no Pod")
			Expect(events).To(ContainElement(ContainSubstring("Drained stopped: the queue of instance type drain-holdanddrain drains")))
			return
		}
		Expect(pod).NotTo(BeNil(), "the Instance's Pod")
	},
	Entry("HoldAndDrain: the queue drains, so the Instance stops and says why", kueue.HoldAndDrain, true),
	Entry("Hold: an administrator's hold (spec.inactive) stops nothing; the Pod queues", kueue.Hold, false),
	Entry("None: the Pod queues", kueue.None, false),
)

// The walkthrough's pinned-demo: node-t4-b holds the T4 pool's 4-card flavor, and the pool's 1-card flavor,
// listed first, must not be assigned to it.
var _ = It("pins an Instance with its node's hostname and the labels of the pool's flavor that holds the node", func() {
	const t4 = "acceleratable.feature.gpustack.ai/nvidia-tesla-t4"
	typ := builders.MakeInstanceType("pin-t4").Obj()
	oneCard := builders.MakeResourceFlavor("pin-t4-1d").NodeLabel(t4, "true").NodeLabel(t4+".count", "1").Obj()
	fourCards := builders.MakeResourceFlavor("pin-t4-4d").NodeLabel(t4, "true").NodeLabel(t4+".count", "4").Obj()
	cq := builders.MakeClusterQueue(typ.Name).Flavor(oneCard.Name).Flavor(fourCards.Name).Obj()
	node := builders.MakeNode("pin-node-t4-b").Label(corev1.LabelHostname, "t4-b.example").Label(t4, "true").Label(t4+".count", "4").Obj()
	inst := builders.MakeInstance("default", "pinned", typ.Name).NodeName(node.Name).Obj()
	suite.Create(typ, oneCard, fourCards, cq, node, inst)

	_, pod, _ := reconcileOnce(inst)
	Expect(pod).NotTo(BeNil(), "the Instance's Pod")
	Expect(pod.Spec.NodeSelector).To(Equal(map[string]string{
		corev1.LabelHostname: "t4-b.example", t4: "true", t4 + ".count": "4",
	}), "the Pod's nodeSelector: the node's own hostname label and its flavor's labels")
})
