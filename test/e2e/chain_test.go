package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/composer"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// Gives a node a label the composer cannot read: the node gets an event naming the label
// and leaves the pools, and the rest of the cluster is still composed.
var _ = It("gives a node a label the composer cannot read", func() {
	kubectl("label", "node", "node-cpu", "general.feature.gpustack.ai/bogus.count=many")
	DeferCleanup(func() { kubectl("label", "node", "node-cpu", "general.feature.gpustack.ai/bogus.count-") })
	waitTable([][]string{
		step1Types[0],
		{"gpustack--generic-linux-amd64", "gpustack-fnv64-3b93966fd73eb9ec", "1/2Gi/100Gi", "0/0 0/0 0/0 0/0", "48/56", "Active"},
		step1Types[2], step1Types[3],
	}, "get", "instancetype")
	eventually(30*time.Second, func() (bool, string) {
		events := &corev1.EventList{}
		if err := k.List(context.Background(), events, client.InNamespace("default")); err != nil {
			return false, err.Error()
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == "node-cpu" && e.Reason == "ProfileUnreadable" &&
				strings.Contains(e.Message, `general.feature.gpustack.ai/bogus.count="many" is not a core count`) {
				return true, ""
			}
		}
		return false, "no ProfileUnreadable event on node-cpu"
	})
})

// Forces 100 recomputes of the converged chain through a client that counts every
// write, and expects none.
var _ = It("forces 100 recomputes of the converged chain through a client that counts every write, and expects none", func() {
	c, err := client.NewWithWatch(cluster.RESTConfig, client.Options{Scheme: k.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	counting, writes := testenv.CountWrites(c)
	r := &composer.Reconciler{Client: counting, Recorder: record.NewFakeRecorder(100)}
	ctx := log.IntoContext(context.Background(), log.Log)
	// A spec before may have restarted the worker, which then leads only once the old Lease expires: the first
	// recompute may finish what the worker is about to write. The next 100 must write nothing.
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "chain"}}); err != nil {
		Fail(fmt.Sprintf("the first resync: %v", err))
	}
	writes.Reset()
	for i := 0; i < 100; i++ {
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "chain"}}); err != nil {
			Fail(fmt.Sprintf("resync %d: %v", i, err))
		}
	}
	if got := writes.List(); len(got) != 0 {
		Fail(fmt.Sprintf("100 resyncs of a converged chain made %d API writes, want 0: %v", len(got), got))
	}
})

// Checks that `plan -o yaml` yields objects the API server accepts.
var _ = It("checks that `plan -o yaml` yields objects the API server accepts", func() {
	bin, _, _ := testenv.BinDir()
	planCmd := exec.Command(bin+"/gpustack-operator", "plan", "--inventory", testenv.Path("examples", "clusters", "walkthrough.yaml"), "-o", "yaml")
	out, err := planCmd.Output()
	if err != nil {
		Fail(fmt.Sprintf("plan: %v", err))
	}
	apply := exec.Command("kubectl", "apply", "--dry-run=server", "-f", "-")
	apply.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig)
	apply.Stdin = strings.NewReader(string(out))
	if b, err := apply.CombinedOutput(); err != nil {
		Fail(fmt.Sprintf("the API server refuses plan's objects: %v\n%s", err, b))
	}
})

// Runs the per-card check on the real Kueue: two 30 % slices share the A10G; on the five
// T4 cards five 60 % slices run, one per card, and a sixth, which quota would admit, waits for a card with
// room with the check's Retry message until one of the five goes.
var _ = It("runs the per-card check on the real Kueue", func() {
	eventually(time.Minute, func() (bool, string) {
		out := kubectl("get", "clusterqueue", "gpustack--nvidia-tesla-t4-linux-amd64", "-o", "jsonpath={.spec.admissionChecksStrategy.admissionChecks[*].name}")
		return out == "gpustack-node-devices", "the T4 queue references the node-devices check: " + out
	})
	ctx := context.Background()
	create := func(name, typ string, pct int32) {
		GinkgoHelper()
		inst := builders.MakeInstance("default", name, typ).Slice(pct, 100).Obj()
		Expect(k.Create(ctx, inst)).To(Succeed())
		DeferCleanup(func() { _ = k.Delete(context.Background(), inst) })
	}
	const a10g, t4 = "gpustack--nvidia-a10g-linux-amd64", "gpustack--nvidia-tesla-t4-linux-amd64"
	create("thirty-a", a10g, 30)
	create("thirty-b", a10g, 30)
	waitPhase("thirty-a", "Ready")
	waitPhase("thirty-b", "Ready")

	for i := 0; i < 5; i++ {
		create(fmt.Sprintf("sixty-%d", i), t4, 60)
	}
	for i := 0; i < 5; i++ {
		waitPhase(fmt.Sprintf("sixty-%d", i), "Ready")
	}
	create("sixty-5", t4, 60)
	eventually(2*time.Minute, func() (bool, string) {
		got := suite.InstancePhase("sixty-5")
		return strings.HasPrefix(got, "Starting: waiting for a card with room: "), fmt.Sprintf("sixty-5: %q; workloads:\n%s", got,
			kubectl("get", "workloads", "-n", "default", "-o", "custom-columns=NAME:.metadata.name,FLAVOR:.status.admission.podSetAssignments[0].flavors.credits\\.gpustack\\.ai/nvidia,CHECKS:.status.admissionChecks[*].message"))
	})
	eventually(time.Minute, func() (bool, string) {
		got := suite.InstancePhase("sixty-5")
		return strings.Contains(got, "the largest free piece is 40%"), "the wait names the largest free piece: " + got
	})
	// kubectl describe tells the story: the Instance is not Ready, held at Starting, and its Workload has the
	// check's event saying why.
	Expect(readyCondition("instance", "sixty-5")).To(HavePrefix("False Starting waiting for a card with room"))
	eventually(time.Minute, func() (bool, string) {
		out := kubectl("get", "events", "-n", "default", "--field-selector", "reason=NoCardWithRoom,involvedObject.kind=Workload",
			"-o", "custom-columns=MESSAGE:.message", "--no-headers")
		return strings.Contains(out, "the largest free piece is 40%"), "the Workloads' NoCardWithRoom events: " + out
	})
	eventually(time.Minute, func() (bool, string) {
		out := kubectl("get", "events", "-n", "default", "--field-selector", "reason=NoCardWithRoom,involvedObject.kind=Instance,involvedObject.name=sixty-5",
			"-o", "custom-columns=MESSAGE:.message", "--no-headers")
		return strings.Contains(out, "the largest free piece is 40%"), "sixty-5's NoCardWithRoom events: " + out
	})
	kubectl("delete", "instance", "sixty-0", "-n", "default")
	waitPhase("sixty-5", "Ready")
	Expect(readyCondition("instance", "sixty-5")).To(HavePrefix("True Ready"))
	Expect(readyCondition("instancetype", t4)).To(HavePrefix("True Active"))
})

// readyCondition reads an object's Ready condition as "status reason message" (an Instance in default).
func readyCondition(kind, name string) string {
	GinkgoHelper()
	args := []string{"get", kind, name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} ` +
		`{.status.conditions[?(@.type=="Ready")].reason} {.status.conditions[?(@.type=="Ready")].message}`}
	if kind == "instance" {
		args = append(args, "-n", "default")
	}
	return kubectl(args...)
}

// Creates, as a server-side dry run, a raw Pod that asks the T4 pool for a slice of 8192 MiB:
// the worker's webhook folds it into 800,000 units (half of a 16 GiB card), overwriting what the client set,
// and defaults the compute budget to 100 %.
var _ = It("creates, as a server-side dry run, a raw Pod that asks the T4 pool for a slice of 8192 MiB", func() {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "fold", Labels: map[string]string{"kueue.x-k8s.io/queue-name": "gpustack-fnv64-6b371caa2da0b799"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/gpu.sliced": resource.MustParse("1"),
				"nvidia.com/gpu.sliced.memory-mib": resource.MustParse("8192"), "nvidia.com/gpu.sliced.units": resource.MustParse("1")},
		}}}},
	}
	Expect(k.Create(context.Background(), pod, client.DryRunAll)).To(Succeed())
	got := pod.Spec.Containers[0].Resources.Limits
	units, cores := got["nvidia.com/gpu.sliced.units"], got["nvidia.com/gpu.sliced.cores-percentage"]
	if units.Value() != 800_000 || cores.Value() != 100 {
		Fail(fmt.Sprintf("the fold gives 800000 units and 100 %% of the cores, got %s and %s", units.String(), cores.String()))
	}

	// Shares on two cards must land on a node with at least two T4s: node-t4-a's one card cannot serve them.
	shared := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shared", Labels: map[string]string{"kueue.x-k8s.io/queue-name": "gpustack-fnv64-6b371caa2da0b799"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/gpu.shared": resource.MustParse("2")}}}}},
	}
	Expect(k.Create(context.Background(), shared, client.DryRunAll)).To(Succeed())
	var got2 []string
	if a := shared.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, e := range term.MatchExpressions {
				got2 = append(got2, fmt.Sprintf("%s %s %v", e.Key, e.Operator, e.Values))
			}
		}
	}
	if diff := cmp.Diff([]string{"acceleratable.feature.gpustack.ai/nvidia-tesla-t4.count Gt [1]"}, got2); diff != "" {
		Fail(fmt.Sprintf("two shares require a node with two cards of the group: -want, +got:\n%s", diff))
	}
})

// Runs an Instance that asks for a port on the generic CPU pool: it gets a NodePort Service
// of its name, and the node port shows in its status.
var _ = It("runs an Instance that asks for a port on the generic CPU pool", func() {
	inst := builders.MakeInstance("default", "ported", "gpustack--generic-linux-amd64").Port(8080, "http").Obj()
	Expect(k.Create(context.Background(), inst)).To(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), inst) })
	waitPhase("ported", "Ready")
	eventually(time.Minute, func() (bool, string) {
		got := kubectl("get", "instance", "ported", "-n", "default", "-o", "jsonpath={.status.ports[0].name} {.status.ports[0].nodePort}")
		svc := kubectl("get", "service", "ported", "-n", "default", "-o", "jsonpath={.spec.type} {.spec.ports[0].nodePort}")
		return strings.HasPrefix(got, "http 3") && strings.HasSuffix(svc, strings.TrimPrefix(got, "http ")) && strings.HasPrefix(svc, "NodePort"),
			fmt.Sprintf("status %q, service %q", got, svc)
	})
})

// Turns instance-type-mixed-on-node off: accelerated nodes leave the CPU pools, the profiler marks node-cpu
// cpu-only (the label its CPU flavor now asks for), and a CPU Instance runs there.
var _ = It("runs a CPU Instance with instance-type-mixed-on-node off", func() {
	setMixed := func(v string) {
		kubectl("-n", "gpustack-system", "patch", "setting", workerv1.SettingInstanceTypeMixedOnNode, "--type=merge",
			"-p", fmt.Sprintf(`{"spec":{"value":%q}}`, v))
	}
	setMixed("false")
	DeferCleanup(func() {
		setMixed("true")
		waitTable(step1Types, "get", "instancetype")
	})
	eventually(time.Minute, func() (bool, string) {
		got := kubectl("get", "instancetype", "gpustack--generic-linux-amd64", "-o", "jsonpath={.status.summary.cpu}")
		return got == "16/16", "the generic CPU pool holds node-cpu alone: " + got
	})
	eventually(time.Minute, func() (bool, string) {
		got := kubectl("get", "nodes", "-l", "feature.gpustack.ai/cpu-only=true", "-o", "jsonpath={.items[*].metadata.name}")
		return got == "node-cpu", "the nodes marked cpu-only: " + got
	})
	inst := builders.MakeInstance("default", "cpu-only", "gpustack--generic-linux-amd64").Obj()
	Expect(k.Create(context.Background(), inst)).To(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), inst) })
	waitPhase("cpu-only", "Ready")
	if got := kubectl("get", "instance", "cpu-only", "-n", "default", "-o", "jsonpath={.status.nodeName}"); got != "node-cpu" {
		Fail(fmt.Sprintf("the CPU Instance runs on node-cpu, got %q", got))
	}
})

// Sends the claims the Argo CD example syncs to the API server as a server-side dry
// run: every webhook and policy accepts them as Argo CD would apply them.
var _ = It("sends the claims the Argo CD example syncs to the API server as a server-side dry run", func() {
	kubectl("apply", "--server-side", "--dry-run=server", "-f", testenv.Path("examples", "gitops", "claims"))
})
