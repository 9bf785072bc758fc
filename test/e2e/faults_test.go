package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/e2esuite"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
)

// The churn script: 60 Instance creates and 40 deletes on the walkthrough's pools, in a fixed order. Every third
// Instance survives, and the 20 survivors fit together (7 one-core CPU Instances, 7 T4 slices of 20 % on five
// cards, 6 A10G slices of 5 % on one), so a run ends with every survivor Ready whatever order Kueue admitted
// the contenders in. The end state is compared by what does not depend on which card a slice landed on.
const (
	churnCreates = 60
	churnLabel   = "e2e-churn"
	t4Pool       = "gpustack--nvidia-tesla-t4-linux-amd64"
	a10gPool     = "gpustack--nvidia-a10g-linux-amd64"
	genericPool  = "gpustack--generic-linux-amd64"
)

// churnOp is one step of the script: create the Instance, or delete the named one.
type churnOp struct {
	create *workerv1.Instance
	delete string
}

func churnName(i int) string { return fmt.Sprintf("churn-%03d", i) }

// churnScript returns the script's 100 steps: Instance i is created, and Instance i-2 deleted unless it is a
// survivor (i%3 == 0).
func churnScript() []churnOp {
	var ops []churnOp
	remove := func(j int) {
		if j >= 0 && j%3 != 0 {
			ops = append(ops, churnOp{delete: churnName(j)})
		}
	}
	for i := 0; i < churnCreates; i++ {
		var w *builders.InstanceWrapper
		switch (i / 3) % 3 {
		case 0:
			w = builders.MakeInstance("default", churnName(i), genericPool)
		case 1:
			w = builders.MakeInstance("default", churnName(i), t4Pool).Slice(20, 100)
		default:
			w = builders.MakeInstance("default", churnName(i), a10gPool).Slice(5, 100)
		}
		inst := w.Obj()
		inst.Labels = map[string]string{churnLabel: "true"}
		ops = append(ops, churnOp{create: inst})
		remove(i - 2)
	}
	remove(churnCreates - 2)
	remove(churnCreates - 1)
	return ops
}

// runChurn runs the script, each step retried until the API server takes it (a webhook or the API server may
// be down while a fault plays out), calling fault after every step with the number of steps done. It then
// waits until the cluster has converged and returns what it converged to.
func runChurn(fault func(done int)) churnResult {
	GinkgoHelper()
	ctx := context.Background()
	DeferCleanup(cleanChurn)
	for n, op := range churnScript() {
		eventually(3*time.Minute, func() (bool, string) {
			var err error
			if op.create != nil {
				err = k.Create(ctx, op.create.DeepCopy())
				err = client.IgnoreAlreadyExists(err)
			} else {
				err = k.Delete(ctx, &workerv1.Instance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: op.delete}})
				err = client.IgnoreNotFound(err)
			}
			if err != nil {
				return false, fmt.Sprintf("step %d of the churn: %v", n, err)
			}
			return true, ""
		})
		if fault != nil {
			fault(n + 1)
		}
	}
	var last churnResult
	eventually(5*time.Minute, func() (bool, string) {
		var why string
		last, why = observeChurn(ctx)
		return why == "", why
	})
	return last
}

// churnResult is what a churn run converged to, in terms that do not depend on placement.
type churnResult struct {
	// Phases are the Instances' phases, by name.
	Phases map[string]string
	// SlicedRemaining is each accelerated pool's free slice percent (the SL view's remaining).
	SlicedRemaining map[string]string
	// Charged are the credits and slices the ledgers charge, over every card.
	Charged, Slices int64
}

// observeChurn reads the churn's end state, and why the cluster has not converged yet ("" once it has): every
// survivor Ready, no Pod of a deleted Instance left, and every card's ledger charging exactly the running Pods
// recorded on it.
func observeChurn(ctx context.Context) (churnResult, string) {
	got := churnResult{Phases: map[string]string{}, SlicedRemaining: map[string]string{}}
	var insts workerv1.InstanceList
	if err := k.List(ctx, &insts, client.InNamespace("default"), client.MatchingLabels{churnLabel: "true"}); err != nil {
		return got, err.Error()
	}
	for _, i := range insts.Items {
		got.Phases[i.Name] = string(i.Status.Phase)
		if i.Status.Phase != workerv1.InstanceReady {
			return got, fmt.Sprintf("Instance %s is %s: %s", i.Name, i.Status.Phase, i.Status.PhaseMessage)
		}
	}
	var pods corev1.PodList
	if err := k.List(ctx, &pods, client.InNamespace("default")); err != nil {
		return got, err.Error()
	}
	running := map[string]int64{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if _, ok := got.Phases[p.Name]; !ok && strings.HasPrefix(p.Name, "churn-") {
			return got, fmt.Sprintf("Pod %s of a deleted Instance is still there (%s)", p.Name, p.Status.Phase)
		}
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, c := range pools.PodClaims(p) {
			// A Ready survivor whose card is not recorded yet is charged nowhere: counting then would take a
			// state that is still settling for the end state (an undisturbed run once read 25 slices for 26).
			if len(c.Cards) == 0 {
				return got, fmt.Sprintf("Pod %s runs with no card recorded yet", p.Name)
			}
			for _, card := range c.Cards {
				switch c.Demand.Family {
				case pools.FamilyExclusive:
					running[card] += pools.M
				case pools.FamilySliced:
					running[card] += c.Demand.Units
				}
			}
		}
	}
	var ledgers workerv1.DevicesList
	if err := k.List(ctx, &ledgers); err != nil {
		return got, err.Error()
	}
	// The free slice percent of each pool's cards, as the ledgers say.
	free := map[string]int64{}
	for _, d := range ledgers.Items {
		for _, g := range d.Status.Groups {
			pool := poolOfProduct[productOf(&d, g.ID)]
			for _, a := range g.Accelerators {
				free[pool] += a.Remaining / (pools.M / 100)
				if a.Allocated != running[a.ID] {
					return got, fmt.Sprintf("node %s card %s: the ledger charges %d credits, its running Pods hold %d", d.Name, a.ID, a.Allocated, running[a.ID])
				}
				if a.Allocated+a.Remaining != pools.M {
					return got, fmt.Sprintf("node %s card %s: %d charged and %d remaining do not add up to a card", d.Name, a.ID, a.Allocated, a.Remaining)
				}
				got.Charged += a.Allocated
				got.Slices += int64(a.AllocatedSlices)
			}
		}
	}
	for _, pool := range []string{t4Pool, a10gPool} {
		it := &workerv1.InstanceType{}
		if err := k.Get(ctx, client.ObjectKey{Name: pool}, it); err != nil {
			return got, err.Error()
		}
		if it.Status.AcceleratorSliced == nil {
			return got, fmt.Sprintf("InstanceType %s has no sliced view", pool)
		}
		got.SlicedRemaining[pool] = it.Status.AcceleratorSliced.Remaining.String()
		if want := strconv.FormatInt(free[pool], 10); got.SlicedRemaining[pool] != want {
			return got, fmt.Sprintf("InstanceType %s shows %s free slice percent, its cards' ledgers %s", pool, got.SlicedRemaining[pool], want)
		}
	}
	return got, ""
}

// poolOfProduct maps the walkthrough's accelerated products to their derived pools.
var poolOfProduct = map[string]string{"NVIDIA A10G": a10gPool, "Tesla T4": t4Pool}

// productOf returns the product of a ledger's card group, from the Devices spec.
func productOf(d *workerv1.Devices, group string) string {
	for _, g := range d.Spec.Groups {
		if g.ID == group {
			return g.Name
		}
	}
	return ""
}

// cleanChurn deletes the churn's Instances and waits for the walkthrough's Step 1 again.
func cleanChurn() {
	deleteInstances(client.MatchingLabels{churnLabel: "true"})
	waitTable(step1Types, "get", "instancetype")
}

// undisturbed is the churn's end state without faults, run once by the first spec that needs it.
var undisturbed *churnResult

func undisturbedChurn() churnResult {
	GinkgoHelper()
	if undisturbed == nil {
		r := runChurn(nil)
		Expect(r.Phases).To(HaveLen(churnCreates/3), "every survivor Ready")
		cleanChurn()
		undisturbed = &r
	}
	return *undisturbed
}

// Kills the worker ten times while the churn script runs (every 10 steps: the leading replica's Pod, deleted
// without a grace period, or a running one while none leads), and compares the end state with an undisturbed
// run of the same script.
var _ = It("converges after the worker is killed ten times during 100 Instance creates and deletes", func() {
	want := undisturbedChurn()
	kills := 0
	got := runChurn(func(done int) {
		if done%10 != 5 {
			return
		}
		victim, err := leaderPod()
		if err != nil || !slices.Contains(workerPods(), victim) {
			eventually(2*time.Minute, func() (bool, string) {
				pods := workerPods()
				return len(pods) > 0, "no worker replica runs"
			})
			victim = workerPods()[0]
		}
		killPod(localcluster.ChartNamespace, victim)
		kills++
	})
	Expect(kills).To(Equal(10))
	Expect(cmp.Diff(want, got)).To(BeEmpty(), "the end state after ten kills: -undisturbed, +disturbed")
})

// Restarts etcd and the API server twice while the churn script runs, and compares the end state with an
// undisturbed run of the same script.
var _ = It("converges after etcd and the API server are restarted during 100 Instance creates and deletes", func() {
	want := undisturbedChurn()
	got := runChurn(func(done int) {
		if done != 30 && done != 70 {
			return
		}
		restartControlPlane()
	})
	Expect(cmp.Diff(want, got)).To(BeEmpty(), "the end state after two control-plane restarts: -undisturbed, +disturbed")
})

// restartControlPlane kills the API server and etcd, and starts them again (etcd keeps its data).
func restartControlPlane() {
	GinkgoHelper()
	ctx := context.Background()
	Expect(cluster.Kill(localcluster.ComponentAPIServer)).To(Succeed())
	Expect(cluster.Kill(localcluster.ComponentEtcd)).To(Succeed())
	Expect(cluster.Restart(ctx, localcluster.ComponentEtcd)).To(Succeed())
	restartAPIServer()
	waitAdmitsInstances()
}

// restartAPIServer kills the API server if it runs and starts it again.
func restartAPIServer() {
	GinkgoHelper()
	_ = cluster.Kill(localcluster.ComponentAPIServer)
	Expect(cluster.Restart(context.Background(), localcluster.ComponentAPIServer)).To(Succeed())
}

// waitAdmitsInstances waits until the API server admits Instances again: a restarted API server, ready, still
// refuses them for a while, until its admission policies resolve their Setting params ("failed to find
// resource referenced by paramKind"); whoever creates one meanwhile retries. The worker's webhooks must answer.
func waitAdmitsInstances() {
	GinkgoHelper()
	ctx := context.Background()
	start := time.Now()
	eventually(3*time.Minute, func() (bool, string) {
		probe := builders.MakeInstance("default", "admission-probe", genericPool).Obj()
		err := k.Create(ctx, probe, client.DryRunAll)
		return err == nil, fmt.Sprintf("a dry-run Instance after the API server's restart: %v", err)
	})
	GinkgoWriter.Printf("the restarted API server admitted Instances after %s\n", time.Since(start).Round(100*time.Millisecond))
}

// Freezes every worker replica's container (as `docker pause` does), takes node-a10g out of its pools,
// compacts etcd and restarts the API server, so that the worker's watches can only resume from a
// resourceVersion that is gone (410 Gone); thaws the worker and expects it to relist and see the change it
// slept through, in the same process (no container restarted).
var _ = It("relists after its watches expire (410 Gone) and misses no change", func() {
	ctx := context.Background()
	before := &corev1.NodeList{}
	Expect(k.List(ctx, before)).To(Succeed())
	type container struct{ pod, node, id, restarts string }
	var frozen []container
	for _, pod := range workerPods() {
		out := kubectl("-n", localcluster.ChartNamespace, "get", "pod", pod, "-o",
			`jsonpath={.spec.nodeName} {.status.containerStatuses[?(@.name=="worker")].containerID} {.status.containerStatuses[?(@.name=="worker")].restartCount}`)
		f := strings.Fields(out)
		Expect(f).To(HaveLen(3), "the worker container of %s: %q", pod, out)
		frozen = append(frozen, container{pod: pod, node: f[0], id: strings.TrimPrefix(f[1], "containerd://"), restarts: f[2]})
	}
	Expect(frozen).NotTo(BeEmpty(), "a worker replica runs")
	thawed := false
	thaw := func() {
		if thawed {
			return
		}
		thawed = true
		for _, c := range frozen {
			Expect(cluster.Freeze(c.node, c.id, false)).To(Succeed(), "thaw %s", c.pod)
		}
	}
	DeferCleanup(thaw)
	for _, c := range frozen {
		Expect(cluster.Freeze(c.node, c.id, true)).To(Succeed(), "freeze %s", c.pod)
	}
	setManaged("node-a10g", "false")
	DeferCleanup(func() { setManaged("node-a10g", "true"); waitTable(step1Types, "get", "instancetype") })
	eventually(time.Minute, func() (bool, string) {
		got := kubectl("get", "node", "node-a10g", "-o", `jsonpath={.metadata.labels.gpustack\.ai/managed}`)
		return got == "false", "NFD carries managed=false onto node-a10g: " + got
	})
	compactEtcd()
	restartAPIServer()

	// What the worker will meet: a watch from the resourceVersion it last saw is gone.
	cs, err := kubernetes.NewForConfig(cluster.RESTConfig)
	Expect(err).NotTo(HaveOccurred())
	w, err := cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: before.ResourceVersion})
	if err == nil {
		ev := <-w.ResultChan()
		w.Stop()
		status, ok := ev.Object.(*metav1.Status)
		Expect(ok).To(BeTrue(), "a watch from the old resourceVersion sends %T, want a Status", ev.Object)
		err = apierrors.FromObject(status)
	}
	Expect(apierrors.IsResourceExpired(err) || apierrors.IsGone(err)).To(BeTrue(), "a watch from before the compaction: %v", err)

	thaw()
	// The kubelet probes a frozen worker too: had it restarted one, the spec would prove nothing of relisting.
	for _, c := range frozen {
		got := kubectl("-n", localcluster.ChartNamespace, "get", "pod", c.pod, "-o",
			`jsonpath={.status.containerStatuses[?(@.name=="worker")].restartCount}`)
		Expect(got).To(Equal(c.restarts), "the restarts of %s's worker container while frozen", c.pod)
	}
	waitAdmitsInstances()
	waitTable([][]string{
		step1Types[0],
		{genericPool, "gpustack-fnv64-3b93966fd73eb9ec", "1/2Gi/100Gi", "0/0 0/0 0/0 0/0", "48/68", "Active"},
		{a10gPool, "gpustack-fnv64-c4680bb149644f1c", "8/64Gi/100Gi", "0/0 0/0 0/0 0/0", "0/0", "Active"},
		step1Types[3],
	}, "get", "instancetype")
})

// compactEtcd compacts etcd's history up to its current revision, through etcd's JSON gateway.
func compactEtcd() {
	GinkgoHelper()
	post := func(path, body string) map[string]any {
		GinkgoHelper()
		resp, err := http.Post(cluster.EtcdURL()+path, "application/json", bytes.NewBufferString(body))
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK), "etcd %s", path)
		var out map[string]any
		Expect(json.NewDecoder(resp.Body).Decode(&out)).To(Succeed())
		return out
	}
	// A range over a key that does not exist still reports the store's revision.
	header, ok := post("/v3/kv/range", `{"key":"AA=="}`)["header"].(map[string]any)
	Expect(ok).To(BeTrue(), "etcd's range answer has a header")
	post("/v3/kv/compaction", fmt.Sprintf(`{"revision":%q,"physical":true}`, header["revision"]))
}

// Kills node-t4-b's device manager while slices run (its Pod deleted without a grace period; the DaemonSet makes
// a new one): the ledgers and the cards' specs stay as they were (the agent republishes the same cards, which
// writes nothing), and a new slice is charged on a card with room, never on one already full.
var _ = It("keeps the ledgers when the device manager is killed and restarted", func() {
	ctx := context.Background()
	var insts []*workerv1.Instance
	for i, w := range []*builders.InstanceWrapper{
		builders.MakeInstance("default", "agent-0", t4Pool).Slice(60, 100),
		builders.MakeInstance("default", "agent-1", t4Pool).Slice(60, 100),
		builders.MakeInstance("default", "agent-2", a10gPool).Slice(60, 100),
	} {
		inst := w.Obj()
		Expect(k.Create(ctx, inst)).To(Succeed(), "Instance %d", i)
		DeferCleanup(func() { _ = k.Delete(context.Background(), inst) })
		insts = append(insts, inst)
	}
	for _, inst := range insts {
		waitPhase(inst.Name, "Ready")
	}
	ledgers := func() map[string]string {
		GinkgoHelper()
		var list workerv1.DevicesList
		Expect(k.List(ctx, &list)).To(Succeed())
		out := map[string]string{}
		for _, d := range list.Items {
			out[d.Name] = fmt.Sprintf("rv=%s status=%+v", d.ResourceVersion, d.Status)
		}
		return out
	}
	before := ledgers()
	// readyAgent is node-t4-b's NVIDIA agent Pod once it runs and is ready: its readiness probe answers once
	// it has published the node.
	readyAgent := func() (string, string) {
		out := kubectl("-n", workerv1.DeviceManagerNamespace, "get", "pods", "--field-selector", "spec.nodeName=node-t4-b", "-o",
			`jsonpath={range .items[?(@.status.phase=="Running")]}{.metadata.name} {.status.containerStatuses[0].ready}{"\n"}{end}`)
		for _, line := range strings.Split(out, "\n") {
			name, ready, _ := strings.Cut(line, " ")
			if strings.HasPrefix(name, devicemanager.DaemonSetName("nvidia")+"-") && ready == "true" {
				return name, ""
			}
		}
		return "", "no NVIDIA agent is ready on node-t4-b: " + out
	}
	agentCards := func(pod string) float64 {
		GinkgoHelper()
		url, err := metricsURL(workerv1.DeviceManagerNamespace, pod)
		Expect(err).NotTo(HaveOccurred())
		return e2esuite.Scrape(url, "gpustack_device_cards", map[string]string{"node": "node-t4-b", "manufacturer": "nvidia", "health": "healthy"})
	}
	old, why := readyAgent()
	Expect(old).NotTo(BeEmpty(), why)
	Expect(agentCards(old)).To(Equal(4.0), "node-t4-b's healthy cards on the agent's metrics endpoint")
	killPod(workerv1.DeviceManagerNamespace, old)
	var restarted string
	eventually(2*time.Minute, func() (bool, string) {
		var why string
		restarted, why = readyAgent()
		return restarted != "" && restarted != old, fmt.Sprintf("the DaemonSet has not replaced %s: %s", old, why)
	})
	Consistently(ledgers).WithTimeout(10*time.Second).WithPolling(time.Second).Should(Equal(before),
		"the Devices objects after the agent's restart")
	Expect(agentCards(restarted)).To(Equal(4.0), "node-t4-b's healthy cards after the agent's restart")

	// A fourth 60 % slice fits only on a T4 card the first two left alone.
	extra := builders.MakeInstance("default", "agent-3", t4Pool).Slice(60, 100).Obj()
	Expect(k.Create(ctx, extra)).To(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), extra) })
	waitPhase(extra.Name, "Ready")
	cards := map[string]bool{}
	for _, name := range []string{"agent-0", "agent-1", "agent-3"} {
		got := kubectl("get", "pod", name, "-n", "default", "-o", `jsonpath={.metadata.annotations.device\.gpustack\.ai/accelerator\.allocated}`)
		Expect(cards).NotTo(HaveKey(got), "two 60 %% slices on one card: %s", got)
		cards[got] = true
	}
	var accelerated []simulated.Node
	for _, n := range inv.Nodes {
		if len(n.Accelerators) > 0 {
			accelerated = append(accelerated, n)
		}
	}
	checkCards(ctx, readLedgers(ctx, accelerated))
})
