package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
)

// Fires 200 slice and whole-card Instances at the T4 pool (five cards on two nodes) at once, until the pool is
// full. Throughout, no card's ledger goes below zero or past its slots, and the cards recorded on the running Pods
// never hold more than a card has: every admitted Pod fits.
var _ = It("fires 200 slice and whole-card Instances at the T4 pool at once", func() {
	ctx := context.Background()
	nodes := t4Nodes()
	DeferCleanup(deleteLabelled, "stress")
	rng := rand.New(rand.NewSource(7))
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := 0; i < 200; i++ {
		w := builders.MakeInstance("default", fmt.Sprintf("stress-%03d", i), t4Pool)
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

	// Watch until the pool is full: every Instance's Pod runs, or waits for admission asking for more than any
	// card (whole cards: any node) has left. How many run then depends on the order Kueue takes the Instances in:
	// two whole-card pairs and a single card fill the five cards with three Pods, small slices with dozens.
	var running int
	var waiting []string
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(time.Second) {
		ledgers := readLedgers(ctx, nodes)
		running = checkCards(ctx, ledgers)
		if waiting = stressWaiting(ctx, ledgers); len(waiting) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(waiting) > 0 {
		Fail(fmt.Sprintf("after 5 minutes the T4 pool is not full (%d Pods run):\n%s", running, strings.Join(waiting, "\n")))
	}
	GinkgoWriter.Printf("%d Pods ran on the five T4 cards\n", running)
})

// stressWaiting returns what keeps the T4 pool from being full: a stress Instance without its Pod, a Pod admitted
// and not running yet, or one waiting for admission whose demand fits a card's (for whole cards, a node's) room
// as the ledgers state it.
func stressWaiting(ctx context.Context, ledgers []cardLedger) []string {
	GinkgoHelper()
	var pods corev1.PodList
	Expect(k.List(ctx, &pods, client.InNamespace("default"), client.HasLabels{workerv1.LabelInstance})).To(Succeed())
	var instances workerv1.InstanceList
	Expect(k.List(ctx, &instances, client.InNamespace("default"), client.MatchingLabels{"e2e": "stress"})).To(Succeed())
	podOf := map[string]*corev1.Pod{}
	for i := range pods.Items {
		podOf[pods.Items[i].Labels[workerv1.LabelInstance]] = &pods.Items[i]
	}
	var waiting []string
	for _, inst := range instances.Items {
		p := podOf[inst.Name]
		if p == nil {
			waiting = append(waiting, fmt.Sprintf("Instance %s has no Pod yet", inst.Name))
			continue
		}
		if p.Status.Phase == corev1.PodRunning {
			continue
		}
		if len(p.Spec.SchedulingGates) == 0 {
			waiting = append(waiting, fmt.Sprintf("Pod %s admitted, %s on node %q", p.Name, p.Status.Phase, p.Spec.NodeName))
			continue
		}
		for _, c := range pools.PodClaims(p) {
			if where := roomFor(c.Demand, ledgers); where != "" {
				waiting = append(waiting, fmt.Sprintf("Pod %s waits for admission; its %s fits %s", p.Name, c.Demand, where))
			}
		}
	}
	sort.Strings(waiting)
	return waiting
}

// roomFor names the first place, by node, with room for the demand (a whole-card demand's node, a slice's card),
// or returns "".
func roomFor(d pools.Demand, ledgers []cardLedger) string {
	for _, l := range ledgers {
		free := 0
		for _, a := range l.cards {
			if d.Family == pools.FamilySliced && a.Remaining >= d.Units && a.AllocatedSlices < l.slots[a.ID] {
				return fmt.Sprintf("card %s of node %s (%d credits left, %d of %d slices)", a.ID, l.node, a.Remaining, a.AllocatedSlices, l.slots[a.ID])
			}
			if a.Remaining == pools.M {
				free++
			}
		}
		if d.Family == pools.FamilyExclusive && int64(free) >= d.Cards {
			return fmt.Sprintf("node %s (%d free cards)", l.node, free)
		}
	}
	return ""
}

// cardLedger is a node's Devices as read once: its cards' room (status) and each card's slice slots (spec).
type cardLedger struct {
	node  string
	cards []workerv1.AcceleratorAllocation
	slots map[string]int32
	// err is why the node's Devices could not be read.
	err error
}

// readLedgers reads the nodes' Devices, in the nodes' order.
func readLedgers(ctx context.Context, nodes []simulated.Node) []cardLedger {
	out := make([]cardLedger, 0, len(nodes))
	for _, n := range nodes {
		l := cardLedger{node: n.Name, slots: map[string]int32{}}
		d := &workerv1.Devices{}
		if l.err = k.Get(ctx, client.ObjectKey{Name: n.Name}, d); l.err == nil {
			for _, g := range d.Spec.Groups {
				for _, a := range g.Accelerators {
					if ls := a.Status.LogicalSliced; ls != nil {
						l.slots[a.ID] = ls.Count
					}
				}
			}
			for _, g := range d.Status.Groups {
				l.cards = append(l.cards, g.Accelerators...)
			}
		}
		out = append(out, l)
	}
	return out
}

// t4Nodes are the walkthrough's nodes with T4 cards.
func t4Nodes() []simulated.Node {
	var out []simulated.Node
	for _, n := range inv.Nodes {
		for _, a := range n.Accelerators {
			if a.Product == "Tesla T4" {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

// checkCards checks the invariants on the ledgers' nodes and returns how many Pods run there.
func checkCards(ctx context.Context, ledgers []cardLedger) int {
	GinkgoHelper()
	running, problems := cardProblems(ctx, ledgers)
	if len(problems) > 0 {
		Fail(strings.Join(problems, "\n"))
	}
	return running
}

// cardProblems returns how many Pods of the default namespace (the Instances') run on the ledgers' nodes and what
// breaks the invariants there: a node's ledger unread, a card's ledger below zero or past its slots, or the
// running Pods recorded on a card holding more than the card has.
func cardProblems(ctx context.Context, ledgers []cardLedger) (int, []string) {
	running := 0
	var problems []string
	for _, l := range ledgers {
		if l.err != nil {
			problems = append(problems, fmt.Sprintf("node %s: %v", l.node, l.err))
			continue
		}
		for _, a := range l.cards {
			if a.Remaining < 0 || a.Remaining > pools.M || a.AllocatedSlices > l.slots[a.ID] {
				problems = append(problems, fmt.Sprintf("node %s card %s: %d credits left, %d of %d slices", l.node, a.ID, a.Remaining, a.AllocatedSlices, l.slots[a.ID]))
			}
		}
		var pods corev1.PodList
		if err := k.List(ctx, &pods, client.InNamespace("default"), client.MatchingFields{"spec.nodeName": l.node}); err != nil {
			problems = append(problems, fmt.Sprintf("node %s: %v", l.node, err))
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
				problems = append(problems, fmt.Sprintf("node %s card %s holds %d credits of running Pods (%d exclusive): a Pod does not fit", l.node, card, u, exclusive[card]))
			}
		}
	}
	return running, problems
}
