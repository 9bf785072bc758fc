package e2e

import (
	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads as prose.
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads as prose.

	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/deviceagent"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
)

// Adds five nodes of four L4 cards each (20 cards) and fires 200 slice and whole-card
// Instances at their pool at once. Throughout, no card's ledger goes below zero or past its slots, and the
// cards recorded on the running Pods never hold more than a card has: every admitted Pod fits.
var _ = It("adds five nodes of four L4 cards each (20 cards) and fires 200 slice and whole-card Instances at their pool at once", func() {
	ctx := context.Background()
	var nodes []simulated.Node
	for i := 0; i < 5; i++ {
		nodes = append(nodes, l4Node(fmt.Sprintf("stress-%d", i), 4))
	}
	addL4Nodes(nodes, "stress", "4/20 4/200 100/2000 0/0")

	rng := rand.New(rand.NewSource(7))
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := 0; i < 200; i++ {
		w := builders.MakeInstance("default", fmt.Sprintf("stress-%03d", i), l4Pool)
		if rng.Intn(3) == 0 {
			w.Accelerators(int32(1 + rng.Intn(2)))
		} else {
			w.Slice(int32(10+10*rng.Intn(6)), 100)
		}
		inst := w.Obj()
		inst.Labels = map[string]string{"e2e": "stress"}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- k.Create(ctx, inst)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		Expect(err).NotTo(HaveOccurred())
	}

	// Watch until the number of running Instances has not changed for 15 s.
	last, since := -1, time.Now()
	for deadline := time.Now().Add(4 * time.Minute); time.Now().Before(deadline) && time.Since(since) < 15*time.Second; time.Sleep(time.Second) {
		running := checkCards(ctx, nodes)
		if running != last {
			last, since = running, time.Now()
		}
	}
	if last < 10 {
		Fail(fmt.Sprintf("only %d of 200 Instances ran on 20 cards", last))
	}
	GinkgoWriter.Printf("%d of 200 Instances ran on 20 cards", last)
})

// l4Pool is the pool the L4 nodes of the stress and HA specs derive.
const l4Pool = "gpustack--nvidia-l4-linux-amd64"

// l4Node is a node of n L4 cards.
func l4Node(name string, n int32) simulated.Node {
	return simulated.Node{Name: name, OS: "linux", Arch: "amd64",
		CPU:    simulated.CPU{Vendor: "AMD", Model: "AMD EPYC 9354", Cores: 32},
		Memory: resource.MustParse("256Gi"), Storage: resource.MustParse("1Ti"),
		Accelerators: []simulated.Accelerators{{Vendor: "nvidia", Product: "NVIDIA L4", Count: n, Memory: resource.MustParse("24Gi"),
			Cores: 7424, Family: "Ada-Lovelace", ComputeCapability: "8.9", DriverVersion: "580.159.03", RuntimeVersion: "13.0"}}}
}

// addL4Nodes adds the nodes with their cards, as their agents would publish them, and waits until the L4 pool
// reads summary. When the spec ends it removes them, the Instances labelled e2e=label and the pool, and waits for
// the walkthrough's Step 1 again.
func addL4Nodes(nodes []simulated.Node, label, summary string) {
	GinkgoHelper()
	ctx := context.Background()
	pub := &deviceagent.Publisher{Client: k}
	for _, n := range nodes {
		Expect(k.Create(ctx, localcluster.NodeFor(n))).To(Succeed())
		cards, err := simulated.New(n).Detect(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(pub.Publish(ctx, n.Name, cards)).To(Succeed())
	}
	DeferCleanup(func() {
		ctx := context.Background()
		_ = k.DeleteAllOf(ctx, &workerv1.Instance{}, client.InNamespace("default"), client.MatchingLabels{"e2e": label})
		for _, n := range nodes {
			_ = k.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}})
			_ = k.Delete(ctx, &workerv1.Devices{ObjectMeta: metav1.ObjectMeta{Name: n.Name}})
			for _, nf := range []string{deviceagent.NodeFeatureName(n.Name), n.Name + "-gpustack-worker"} {
				_ = k.Delete(ctx, &nfdv1alpha1.NodeFeature{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: nf}})
			}
		}
		_ = k.Delete(ctx, &workerv1.InstanceType{ObjectMeta: metav1.ObjectMeta{Name: l4Pool}})
		waitTable(step1Types, "get", "instancetype")
	})
	eventually(2*time.Minute, func() (bool, string) {
		out := kubectl("get", "instancetype", "-o", "jsonpath={.items[?(@.metadata.name==\""+l4Pool+"\")].status.summary.accelerator}")
		return out == summary, "the L4 pool: " + out
	})
}

// checkCards checks the invariants on the nodes and returns how many Pods run there.
func checkCards(ctx context.Context, nodes []simulated.Node) int {
	GinkgoHelper()
	running, problems := cardProblems(ctx, nodes)
	if len(problems) > 0 {
		Fail(strings.Join(problems, "\n"))
	}
	return running
}

// cardProblems returns how many Pods run on the nodes and what breaks the invariants there: a card's ledger
// below zero or past its slots, or the running Pods recorded on a card holding more than the card has.
func cardProblems(ctx context.Context, nodes []simulated.Node) (int, []string) {
	running := 0
	var problems []string
	for _, n := range nodes {
		d := &workerv1.Devices{}
		if err := k.Get(ctx, client.ObjectKey{Name: n.Name}, d); err != nil {
			problems = append(problems, fmt.Sprintf("node %s: %v", n.Name, err))
			continue
		}
		slots := map[string]int32{}
		for _, g := range d.Spec.Groups {
			for _, a := range g.Accelerators {
				if ls := a.Status.LogicalSliced; ls != nil {
					slots[a.ID] = ls.Count
				}
			}
		}
		for _, g := range d.Status.Groups {
			for _, a := range g.Accelerators {
				if a.Remaining < 0 || a.Remaining > pools.M || a.AllocatedSlices > slots[a.ID] {
					problems = append(problems, fmt.Sprintf("node %s card %s: %d credits left, %d of %d slices", n.Name, a.ID, a.Remaining, a.AllocatedSlices, slots[a.ID]))
				}
			}
		}
		var pods corev1.PodList
		if err := k.List(ctx, &pods, client.MatchingFields{"spec.nodeName": n.Name}); err != nil {
			problems = append(problems, fmt.Sprintf("node %s: %v", n.Name, err))
			continue
		}
		used := map[string]int64{}
		exclusive := map[string]int{}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Status.Phase != corev1.PodRunning {
				continue
			}
			running++
			for _, c := range pools.PodClaims(p) {
				for _, card := range c.Cards {
					switch c.Demand.Family {
					case pools.FamilyExclusive:
						used[card] += pools.M
						exclusive[card]++
					case pools.FamilySliced:
						used[card] += c.Demand.Units
					}
				}
			}
		}
		for card, u := range used {
			if u > pools.M || exclusive[card] > 1 {
				problems = append(problems, fmt.Sprintf("node %s card %s holds %d credits of running Pods (%d exclusive): a Pod does not fit", n.Name, card, u, exclusive[card]))
			}
		}
	}
	return running, problems
}
