package instance_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/cachepolicy"
	"github.com/gpustack/gpustack-operator/internal/controller/instance"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// Runs the Instance controller in a manager with the worker's cache: an Instance's access addresses follow its
// Pod's node, and, when an instance-access Setting changes, the setting, with nothing else changed.
var _ = It("shows an Instance's access addresses, again when the access settings change", func() {
	runInManager(func(mgr ctrl.Manager) error {
		return (&instance.Reconciler{Client: mgr.GetClient(), Recorder: record.NewFakeRecorder(100)}).SetupWithManager(mgr)
	})

	typ := builders.MakeInstanceType("access-cpu").Obj()
	inst := builders.MakeInstance("default", "access-local", typ.Name).Obj()
	suite.Create(typ, inst)
	pod := &corev1.Pod{}
	Eventually(func() error {
		return suite.Client.Get(context.Background(), client.ObjectKeyFromObject(inst), pod)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), pod) })
	pod.Status.HostIP, pod.Status.HostIPs = "10.1.2.5", []corev1.HostIP{{IP: "10.1.2.5"}}
	Expect(suite.Client.Status().Update(context.Background(), pod)).To(Succeed())
	addresses := func(g Gomega) []string {
		got := &workerv1.Instance{}
		g.Expect(suite.Client.Get(context.Background(), client.ObjectKeyFromObject(inst), got)).To(Succeed())
		return got.Status.AccessAddresses
	}
	Eventually(addresses).WithTimeout(30 * time.Second).Should(Equal([]string{"10.1.2.5"}))

	createSettings(map[string]string{workerv1.SettingInstanceAccessStaticAddress: "gpu.example.com"})
	Eventually(addresses).WithTimeout(30*time.Second).Should(Equal([]string{"gpu.example.com"}),
		"a Setting's change shows the access again, with nothing else changed")
})

// runInManager runs, until the spec ends, a manager with the worker's cache (cachepolicy.Options: Pods and Nodes
// trimmed as the worker keeps them) and the controllers setup registers.
func runInManager(setup func(ctrl.Manager) error) {
	GinkgoHelper()
	mgr, err := ctrl.NewManager(suite.Config, ctrl.Options{Scheme: scheme.New(), Cache: cachepolicy.Options(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	Expect(err).NotTo(HaveOccurred())
	Expect(setup(mgr)).To(Succeed())
	testenv.RunUntilCleanup(mgr.Start)
}
