package gateway_test

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/gateway"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// runGateway runs a gateway of the members in the system namespace, keeping their answers, until stop is
// called or the spec ends.
func runGateway(c client.Client) (gw *gateway.Gateway, stop func()) {
	gw = &gateway.Gateway{Client: c, Namespace: workerv1.SystemNamespace, Scheme: scheme.New(), Interval: 200 * time.Millisecond,
		Timeout: time.Second, Log: logr.Discard(), Answers: &gateway.Answers{Client: c, Namespace: workerv1.SystemNamespace}}
	run, keep := testenv.RunUntilCleanup(gw.Run), testenv.RunUntilCleanup(gw.KeepAnswers)
	stop = func() { keep(); run() }
	return gw, stop
}

// memberState is the gateway's state of the named member.
func memberState(gw *gateway.Gateway, name string) gateway.MemberState {
	states, _ := gw.States()
	for _, s := range states {
		if s.Name == name {
			return s
		}
	}
	return gateway.MemberState{}
}

// A gateway keeps each member's last answer; one started while the member does not answer serves that answer,
// unreachable and with its age, instead of a member that holds nothing; and the answers are written only when
// they changed.
var _ = It("serves what a member last answered through a restart during the member's outage", func(ctx context.Context) {
	m := startMember(suite.Client, "member-kept")
	// Other specs' gateways read the members of the system namespace too.
	DeferCleanup(func() {
		for _, name := range []string{"member-kept", gatewayv1.AnswersSecretName} {
			_ = suite.Client.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: name}})
		}
	})
	m.instanceType("kept", true, 1, 2, 2, workerv1.InstanceTypeActive)
	first, stop := runGateway(suite.Client)
	Eventually(func(g Gomega) {
		s := &corev1.Secret{}
		g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: gatewayv1.AnswersSecretName}, s)).To(Succeed())
		g.Expect(s.Data).To(HaveKey("member-kept"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	seen := memberState(first, "member-kept").LastSeen
	Expect(seen.IsZero()).To(BeFalse())
	stop()

	m.proxy.cut()
	second, _ := runGateway(suite.Client)
	Eventually(func() error { return second.MembersRead(nil) }).WithTimeout(30 * time.Second).Should(Succeed())
	st := memberState(second, "member-kept")
	Expect(st.Reachable).To(BeFalse())
	Expect(st.Message).To(ContainSubstring("cannot read member member-kept"))
	Expect(st.LastSeen).To(BeTemporally("~", seen, time.Second), "the age of what it last answered")
	Expect(st.InstanceTypes).To(ConsistOf(HaveField("Name", "kept")), "what it last answered, kept through the restart")
	Expect(gateway.AggregatedInstanceTypes([]gateway.MemberState{st})).To(ConsistOf(
		HaveField("Status.Inactive", ContainElement("member-kept"))), "served as inactive, not as gone")

	// Nothing changed: the answers are not written again, and once kept they are not even read again.
	var gets atomic.Int64
	c, writes := testenv.CountWrites(interceptor.NewClient(suite.Client, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			gets.Add(1)
			return c.Get(ctx, key, obj, opts...)
		},
	}))
	answers := &gateway.Answers{Client: c, Namespace: workerv1.SystemNamespace}
	states, _ := second.States()
	writes.ExpectConverged(func() error { return answers.Save(ctx, states) })
	gets.Store(0)
	writes.ExpectConverged(func() error { return answers.Save(ctx, states) })
	Expect(gets.Load()).To(BeZero(), "answers as last kept are read again")
})
