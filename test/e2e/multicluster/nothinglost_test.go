package multicluster

import (
	"context"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/e2esuite"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// Nothing a member says about itself stops the manager's Instances. member-a has the only A10G: the manager's
// Instance on it stays Ready, with no spec.stop written and its Pod on member-a the same, through member-a's
// Hold of its A10G type, member-a's Secret deleted and made again, and the worker-gateway restarted while
// member-a's API server is down (for longer than the restarted gateway waits for a member's first answer, the
// suite's firstAnswerGrace): the restarted gateway serves member-a's last answer, which the one before kept.
// While it is down the manager shows it unreachable, its types inactive and out of the sums, and counts it
// again once it answers; member-a's worker, whose leader stops when it loses its Lease, restarts once and waits
// for its API server rather than crash-looping.
var _ = It("keeps the manager's Instances through a member's Hold, its Secret made again and a gateway restart during an outage", func() {
	const a10gType = "gpustack--nvidia-a10g-linux-amd64"
	waitAggregated(bothAnswer)
	ctx, k := context.Background(), managerClient
	a := members["member-a"]
	e2esuite.WaitFor(6*time.Minute, func() (bool, string) {
		out, _ := testenv.Kubectl(manager.Kubeconfig, "get", "multikueueclusters", "member-a", "-o", "jsonpath={.status.conditions[?(@.type=='Active')].status}")
		typ, _ := testenv.Kubectl(manager.Kubeconfig, "get", "instancetype", a10gType, "-o", "jsonpath={.status.phase}")
		return out == "True" && typ == string(workerv1.InstanceTypeActive), "member-a Active: " + out + "; the manager's " + a10gType + ": " + typ
	})
	inst := builders.MakeInstance("default", "kept-a10g", a10gType).Accelerators(1).Obj()
	Eventually(func() error { return k.Create(ctx, inst) }, 30*time.Second, time.Second).Should(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), inst) })
	e2esuite.WaitFor(3*time.Minute, func() (bool, string) {
		s := instanceState(inst.Name)
		return strings.HasPrefix(s, "Ready/member-a/"), "the manager's Instance (phase/cluster/message): " + s
	})
	uid := a.Kubectl("-n", "default", "get", "pod", inst.Name, "-o", "jsonpath={.metadata.uid}")
	// stillRunning checks that the manager's Instance runs on, unstopped, on the same Pod of member-a.
	stillRunning := func(after string) {
		GinkgoHelper()
		e2esuite.WaitFor(3*time.Minute, func() (bool, string) {
			s := instanceState(inst.Name)
			pod, _ := testenv.Kubectl(a.Cluster.Kubeconfig, "-n", "default", "get", "pod", inst.Name, "-o", "jsonpath={.metadata.uid} {.status.phase}")
			return strings.HasPrefix(s, "Ready/member-a/") && pod == uid+" Running",
				after + ": the manager's Instance (phase/cluster/message): " + s + "; member-a's Pod (uid phase): " + pod + ", was " + uid
		})
		notStopped(after, client.ObjectKeyFromObject(inst))
	}
	// managerType is the manager's type's phase and when the gateway marked it as no longer offered.
	managerType := func() string {
		out, _ := testenv.Kubectl(manager.Kubeconfig, "get", "instancetype", a10gType, "-o",
			"jsonpath={.status.phase} {.metadata.annotations."+strings.ReplaceAll(gatewayv1.AnnotationUnwantedSince, ".", `\.`)+"}")
		return out
	}
	waitType := func(prefix string) {
		GinkgoHelper()
		e2esuite.WaitFor(3*time.Minute, func() (bool, string) {
			t := managerType()
			return strings.HasPrefix(t, prefix), "the manager's type (phase, unwanted since): " + t
		})
	}
	const active, held, marked = "Active ", "Inactive ", "Inactive 2"

	By("member-a holding its A10G type: the manager's type turns Inactive and stays")
	a.Kubectl("patch", "instancetype", a10gType, "--type=merge", "-p", `{"spec":{"inactive":true}}`)
	waitType(held)
	stillRunning("held")
	a.Kubectl("patch", "instancetype", a10gType, "--type=merge", "-p", `{"spec":{"inactive":false}}`)
	waitType(active)

	By("member-a's Secret deleted and made again: the manager keeps its type, marked, and takes it back")
	secret := &corev1.Secret{}
	Expect(k.Get(ctx, client.ObjectKey{Namespace: gatewayv1.MembersNamespace, Name: "member-a"}, secret)).To(Succeed())
	Expect(k.Delete(ctx, secret)).To(Succeed())
	waitType(marked)
	stillRunning("member-a's Secret deleted")
	again := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secret.Namespace, Name: secret.Name, Labels: secret.Labels}, Data: secret.Data}
	Expect(k.Create(ctx, again)).To(Succeed())
	waitType(active)
	stillRunning("member-a's Secret made again")

	By("member-a's API server down: the manager shows it unreachable, its types inactive and out of the sums")
	restarts := workerRestarts(a.Cluster.Kubeconfig)
	if err := a.Cluster.Kill("kube-apiserver"); err != nil {
		Fail(err.Error())
	}
	down := time.Now()
	e2esuite.WaitFor(time.Minute, func() (bool, string) {
		out, _ := testenv.Kubectl(manager.Kubeconfig, "get", "clustermember", "member-a", "-o", "jsonpath={.status.reachable}")
		return out == "false", "member-a reachable: " + out
	})
	waitAggregated(memberADown)
	// An outage alone changes nothing of the manager's type: member-a keeps its place.
	Expect(managerType()).To(Equal(active), "the manager's type while member-a is down (phase, unwanted since)")

	By("the worker-gateway restarted during the outage of member-a")
	for _, args := range [][]string{{"rollout", "restart", "deployment/gpustack-operator-worker-gateway"},
		{"rollout", "status", "deployment/gpustack-operator-worker-gateway", "--timeout=2m"}} {
		out, err := testenv.Kubectl(manager.Kubeconfig, append([]string{"-n", workerv1.SystemNamespace}, args...)...)
		Expect(err).NotTo(HaveOccurred(), out)
	}
	// The new gateway starts from member-a's last answer, which the one before it kept: member-a unreachable,
	// with the age of that answer and its types, so past the new gateway's first-answer grace the manager's type
	// is as the outage left it, not marked as no longer offered.
	e2esuite.WaitFor(time.Minute, func() (bool, string) {
		out, _ := testenv.Kubectl(manager.Kubeconfig, "get", "clustermember", "member-a", "-o",
			"jsonpath={.status.reachable} {.status.instanceTypes} {.status.lastSeen} {.status.message}")
		f := strings.Fields(out)
		if len(f) < 3 {
			return false, "member-a (reachable, types, last seen, message): " + out
		}
		seen, err := time.Parse(time.RFC3339, f[2])
		return f[0] == "false" && f[1] != "0" && err == nil && seen.Before(down),
			"member-a (reachable, types, last seen, message): " + out + "; down since " + down.Format(time.RFC3339)
	})
	time.Sleep(outage - time.Since(down))
	Expect(managerType()).To(Equal(active), "the manager's type past the new gateway's first-answer grace (phase, unwanted since)")
	notStopped("member-a down past the new gateway's grace", client.ObjectKeyFromObject(inst))
	restartCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := a.Cluster.Restart(restartCtx, "kube-apiserver"); err != nil {
		Fail(err.Error())
	}
	stillRunning("member-a back after its outage")
	waitType(active)
	// The worker's leader lost its Lease in the outage and stopped; started again while the API server was still
	// away, it waited for it rather than exit at its first request, so it restarted once and is not left in the
	// kubelet's back-off.
	waitControllersReady(a.Cluster.Kubeconfig)
	Expect(workerRestarts(a.Cluster.Kubeconfig)).To(BeNumerically("<=", restarts+1),
		"member-a's worker containers' restarts through the outage, from %d", restarts)

	By("member-a counted again once it answers")
	// The Instance holds member-a's A10G, so that row is left out; every other is as before the outage.
	waitAggregated(bothAnswer, a10gType)
})

// outage is how long member-a's API server stays down: past the restarted gateway's grace (firstAnswerGrace,
// 30s in this suite) with time to spare, as the gateway's restart takes a while of its own.
const outage = 90 * time.Second

// memberADown is bothAnswer with member-a not answering: its types are listed inactive, naming it, and only
// member-b's pools count (its generic pool alone: 112 free cores on one node, 144 remaining).
var memberADown = [][]string{header,
	{"gpustack--generic-linux-amd64", "1/2", "0/0 0/0 0/0 0/0", "112/144", "1", "member-a"},
	{"gpustack--nvidia-a100-sxm4-80gb-linux-amd64", "1/1", "0/0 0/0 0/0 1/7", "0/0", "1", ""},
	{"gpustack--nvidia-a10g-linux-amd64", "0/1", "0/0 0/0 0/0 0/0", "0/0", "0", "member-a"},
	{"gpustack--nvidia-h100-80gb-hbm3-linux-amd64", "1/1", "0/0 0/0 0/0 1/56", "0/0", "1", ""},
	{"gpustack--nvidia-tesla-t4-linux-amd64", "0/1", "0/0 0/0 0/0 0/0", "0/0", "0", "member-a"},
}

// workerRestarts is how many times the worker's containers restarted in the cluster of kubeconfig, all replicas
// together.
func workerRestarts(kubeconfig string) int {
	GinkgoHelper()
	out, err := testenv.Kubectl(kubeconfig, "-n", localcluster.ChartNamespace, "get", "pods", "-l", "app.kubernetes.io/component=worker",
		"-o", "jsonpath={.items[*].status.containerStatuses[*].restartCount}")
	Expect(err).NotTo(HaveOccurred(), out)
	n := 0
	for _, f := range strings.Fields(out) {
		v, err := strconv.Atoi(f)
		Expect(err).NotTo(HaveOccurred(), out)
		n += v
	}
	return n
}

// notStopped checks that nothing wrote spec.stop into the manager's Instance.
func notStopped(after string, key client.ObjectKey) {
	GinkgoHelper()
	got := &workerv1.Instance{}
	Expect(managerClient.Get(context.Background(), key, got)).To(Succeed())
	Expect(got.Spec.Stop).To(BeFalse(), "%s: the manager's Instance's spec.stop", after)
}
