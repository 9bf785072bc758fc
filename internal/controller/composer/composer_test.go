package composer_test

import (
	"context"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads as prose.
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads as prose.
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/composer"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
	"github.com/gpustack/gpustack-operator/test/framework/walkthrough"
)

var suite testenv.EnvtestSuite

func TestComposer(t *testing.T) { testenv.RunSuite(t, "composer controller suite", &suite) }

// profiledNodes returns the inventory's nodes as the cluster shows them once the profiler, the device agents
// and NFD have done their part: Nodes with the general.* and acceleratable.* labels, and Devices inventories.
func profiledNodes(file string) []client.Object {
	GinkgoHelper()
	inv, err := simulated.Load(testenv.Path("examples", "clusters", file))
	Expect(err).NotTo(HaveOccurred())
	var out []client.Object
	for _, n := range inv.Nodes {
		devices, err := simulated.New(n).Detect(context.Background())
		Expect(err).NotTo(HaveOccurred())
		labels := map[string]string{corev1.LabelOSStable: n.OS, corev1.LabelArchStable: n.Arch}
		for k, v := range pools.WorkerLabels(n.CPU.Vendor, n.CPU.Model, n.CPU.Family, n.CPU.ID, n.CPU.Cores, "true") {
			labels[k] = v
		}
		for k, v := range providers.NodeLabels(devices) {
			labels[k] = v
		}
		out = append(out, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels,
			Annotations: map[string]string{pools.AnnotationCPUName: n.CPU.Model}}})
		if len(devices) > 0 {
			out = append(out, &workerv1.Devices{ObjectMeta: metav1.ObjectMeta{Name: n.Name}, Spec: providers.DevicesSpec(devices)})
		}
	}
	return out
}

// chain is what a case reads back of the cluster after a recompute.
type chain struct {
	ResourceFlavors []string
	ClusterQueues   []string
	LocalQueues     []string
	// Types are the InstanceTypes' names and their status columns, as `kubectl get instancetype` shows them.
	Types [][]string
}

func observe() chain {
	GinkgoHelper()
	ctx := context.Background()
	var got chain
	rfs, cqs, lqs, its := &kueue.ResourceFlavorList{}, &kueue.ClusterQueueList{}, &kueue.LocalQueueList{}, &workerv1.InstanceTypeList{}
	for _, l := range []client.ObjectList{rfs, cqs, lqs, its} {
		Expect(suite.Client.List(ctx, l)).To(Succeed())
	}
	for _, o := range rfs.Items {
		got.ResourceFlavors = append(got.ResourceFlavors, o.Name)
	}
	for _, o := range cqs.Items {
		got.ClusterQueues = append(got.ClusterQueues, o.Name)
	}
	for _, o := range lqs.Items {
		got.LocalQueues = append(got.LocalQueues, o.Namespace+"/"+o.Name)
	}
	got.Types = [][]string{walkthrough.Step1Types[0]}
	for _, it := range its.Items {
		s := it.Status.Summary
		got.Types = append(got.Types, []string{it.Name, it.Labels[pools.LabelQueueEntrance], s.Unit, s.Accelerator, s.CPU, string(it.Status.Phase)})
	}
	for _, s := range [][]string{got.ResourceFlavors, got.ClusterQueues, got.LocalQueues} {
		sort.Strings(s)
	}
	return got
}

// Recomputes the chain of the walkthrough's four nodes (Step 1), then with node-a10g taken out of its pools
// (Step 2), checking what the composer wrote; each converged recompute must write nothing.
var _ = It("composes the walkthrough's Steps 1 and 2, and writes nothing once converged", func() {
	ctx := context.Background()
	suite.Create(profiledNodes("walkthrough.yaml")...)
	c, writes := testenv.CountWrites(suite.Client)
	r := &composer.Reconciler{Client: c, Recorder: record.NewFakeRecorder(100)}
	recompute := func(step string) {
		GinkgoHelper()
		writes.Reset()
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "chain"}})
		Expect(err).NotTo(HaveOccurred(), step)
	}
	entrances := []string{}
	for _, row := range walkthrough.Step1Types[1:] {
		entrances = append(entrances, "default/"+row[1])
	}
	sort.Strings(entrances)
	step1 := chain{
		ResourceFlavors: []string{"gpustack--amd-epyc-7r13-linux-amd64-16c", "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64-1d",
			"gpustack--amd-epyc-7r32-linux-amd64-4c", "gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-1d",
			"gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-4d",
			"gpustack--intel-xeon-platinum-8259cl-linux-amd64-48c", "gpustack--intel-xeon-platinum-8259cl-linux-amd64-4c"},
		ClusterQueues: []string{"gpustack--generic-linux-amd64", "gpustack--nvidia-a10g-linux-amd64", "gpustack--nvidia-tesla-t4-linux-amd64"},
		LocalQueues:   entrances,
		Types:         walkthrough.Step1Types,
	}

	// The first recompute creates the derived types; the next gives them their pools and status.
	recompute("step 1")
	recompute("step 1, derived types")
	Expect(cmp.Diff(step1, observe())).To(BeEmpty(), "Step 1: Reconcile(...): -want, +got")
	recompute("step 1, converged")
	Expect(writes.List()).To(BeEmpty(), "Step 1: a converged Reconcile(...) wrote")

	node := &corev1.Node{}
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "node-a10g"}, node)).To(Succeed())
	node.Labels[pools.LabelManaged] = "false"
	Expect(suite.Client.Update(ctx, node)).To(Succeed())
	recompute("step 2")
	step2 := step1
	step2.ResourceFlavors = []string{"gpustack--amd-epyc-7r13-linux-amd64-16c",
		"gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-1d",
		"gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-4d",
		"gpustack--intel-xeon-platinum-8259cl-linux-amd64-48c", "gpustack--intel-xeon-platinum-8259cl-linux-amd64-4c"}
	step2.Types = [][]string{walkthrough.Step1Types[0],
		{"gpustack--generic-linux-amd64", "gpustack-fnv64-3b93966fd73eb9ec", "1/2Gi/100Gi", "0/0 0/0 0/0 0/0", "48/68", "Active"},
		{"gpustack--nvidia-a10g-linux-amd64", "gpustack-fnv64-c4680bb149644f1c", "8/64Gi/100Gi", "0/0 0/0 0/0 0/0", "0/0", "Active"},
		walkthrough.Step1Types[3]}
	Expect(cmp.Diff(step2, observe())).To(BeEmpty(), "Step 2: Reconcile(...): -want, +got")
	recompute("step 2, converged")
	Expect(writes.List()).To(BeEmpty(), "Step 2: a converged Reconcile(...) wrote")
})
