package instance_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/instancepod"
	"github.com/gpustack/gpustack-operator/internal/controller/instance"
)

// Runs the dispatched-Pod controller in a manager with the worker's cache (its Pods trimmed), as a member's
// worker does: a dispatched Pod's Service is made from what the cache keeps of the Pod, and its access note
// follows the Pod's node and, when a Setting changes, this cluster's instance-access settings.
var _ = It("notes a dispatched Instance's access from the worker's cache, again when the access settings change", func() {
	runInManager(func(mgr ctrl.Manager) error {
		return (&instance.DispatchedReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
	})

	pod := dispatchedPod("dispatched-watched")
	suite.Create(pod)
	pod.Status.HostIP, pod.Status.HostIPs = "10.1.2.4", []corev1.HostIP{{IP: "10.1.2.4"}}
	Expect(suite.Client.Status().Update(context.Background(), pod)).To(Succeed())
	addresses := func(g Gomega) []string {
		svc := &corev1.Service{}
		g.Expect(suite.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), svc)).To(Succeed())
		var a instancepod.Access
		g.Expect(json.Unmarshal([]byte(svc.Annotations[workerv1.AnnotationInstanceAccess]), &a)).To(Succeed())
		g.Expect(a.Ports).To(HaveLen(1))
		g.Expect(a.Ports[0].NodePort).NotTo(BeZero())
		return a.Addresses
	}
	Eventually(addresses).WithTimeout(30 * time.Second).Should(Equal([]string{"10.1.2.4"}))

	createSettings(map[string]string{workerv1.SettingInstanceAccessWildcardDNS: "nip.io"})
	Eventually(addresses).WithTimeout(30*time.Second).Should(Equal([]string{"10.1.2.4.nip.io"}),
		"a Setting's change notes the access again, with nothing else changed")
})
