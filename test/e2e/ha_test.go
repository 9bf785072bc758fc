package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"context"
	"fmt"
	"math/rand"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
)

// metricsClient reads the replicas' metrics; a killed replica's address may not answer at all.
var metricsClient = &http.Client{Timeout: 5 * time.Second}

// leading reads a worker replica's leader_election_master_status for the worker's Lease: whether it leads. A
// replica that does not answer (killed) or has not run for the Lease yet does not lead.
func leading(pod string) bool {
	url, err := metricsURL(localcluster.ChartNamespace, pod)
	if err != nil {
		return false
	}
	resp, err := metricsClient.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return false
	}
	for _, m := range families["leader_election_master_status"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" && l.GetValue() == "gpustack-operator-worker" && m.GetGauge().GetValue() == 1 {
				return true
			}
		}
	}
	return false
}

// leadingPods are those of the worker's Pods whose metrics say they lead.
func leadingPods(pods []string) []string {
	var out []string
	for _, p := range slices.Compact(slices.Sorted(slices.Values(pods))) {
		if leading(p) {
			out = append(out, p)
		}
	}
	return out
}

// Sends 50 slices at the T4 pool (five cards on two nodes) and kills the leading replica of the chart's two
// mid-way, deleting its Pod without a grace period. Throughout, at most one replica leads and no card holds
// more than it has; another replica takes the lead in under 30 s and admits the slices that wait. That is the
// other running replica or the one the Deployment makes in place of the killed Pod: both run for the Lease
// once it expires, and either may win.
var _ = It("hands the lead to the other worker replica when the leader is killed mid-way through 50 slices", func() {
	ctx := context.Background()
	var replicas []string
	eventually(2*time.Minute, func() (bool, string) {
		replicas = workerPods()
		return len(replicas) == 2, fmt.Sprintf("the worker's running replicas: %v", replicas)
	})
	leader, err := leaderPod()
	Expect(err).NotTo(HaveOccurred())
	Expect(replicas).To(ContainElement(leader))
	nodes := t4Nodes()

	// Watch, until the spec ends, that at most one replica leads and that no card holds more than it has.
	var (
		mu       sync.Mutex
		problems []string
	)
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(watched)
		for watchCtx.Err() == nil {
			_, p := cardProblems(watchCtx, readLedgers(watchCtx, nodes))
			if leaders := leadingPods(append(workerPods(), leader)); len(leaders) > 1 {
				p = append(p, fmt.Sprintf("%d replicas lead: %v", len(leaders), leaders))
			}
			mu.Lock()
			if watchCtx.Err() == nil {
				problems = append(problems, p...)
			}
			mu.Unlock()
			time.Sleep(250 * time.Millisecond)
		}
	}()
	DeferCleanup(func() { stopWatch(); <-watched })
	DeferCleanup(deleteLabelled, "ha")

	rng := rand.New(rand.NewSource(11))
	for i := 0; i < 50; i++ {
		inst := builders.MakeInstance("default", fmt.Sprintf("ha-%02d", i), t4Pool).Slice(int32(10+10*rng.Intn(6)), 100).Obj()
		inst.Labels = map[string]string{"e2e": "ha"}
		Expect(k.Create(ctx, inst)).To(Succeed())
	}
	ready := func() []string {
		var list workerv1.InstanceList
		Expect(k.List(ctx, &list, client.InNamespace("default"), client.MatchingLabels{"e2e": "ha"})).To(Succeed())
		var out []string
		for _, i := range list.Items {
			if i.Status.Phase == workerv1.InstanceReady {
				out = append(out, i.Name)
			}
		}
		return out
	}
	eventually(3*time.Minute, func() (bool, string) {
		n := len(ready())
		return n >= 3, fmt.Sprintf("%d of 50 slices Ready before the leader goes", n)
	})

	killPod(localcluster.ChartNamespace, leader)
	killed := time.Now()
	var successor string
	eventually(time.Minute, func() (bool, string) {
		holder, err := leaderPod()
		if err != nil {
			return false, err.Error()
		}
		successor = holder
		return holder != leader && leading(holder), "the Lease's holder, leading by its own metrics: " + holder
	})
	took := time.Since(killed)
	GinkgoWriter.Printf("%s took the lead %s after %s was killed\n", successor, took.Round(100*time.Millisecond), leader)
	Expect(took).To(BeNumerically("<", 30*time.Second), "the time the other replica took to lead")

	// The new leader admits: the running slices go, and others take their cards.
	before := ready()
	for _, name := range before {
		Expect(k.Delete(ctx, &workerv1.Instance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})).To(Succeed())
	}
	eventually(3*time.Minute, func() (bool, string) {
		fresh := 0
		for _, n := range ready() {
			if !slices.Contains(before, n) {
				fresh++
			}
		}
		return fresh >= 2, fmt.Sprintf("%d slices Ready under the new leader", fresh)
	})
	stopWatch()
	<-watched
	mu.Lock()
	defer mu.Unlock()
	Expect(problems).To(BeEmpty(), "what the watch saw")
})
