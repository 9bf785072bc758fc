package e2e

import (
	"net/http"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads as prose.
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads as prose.

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
	"github.com/gpustack/gpustack-operator/internal/settings"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
	"github.com/gpustack/gpustack-operator/test/framework/walkthrough"
)

// The seed's Step 1 tables, SH once-max as card counts (the newer reading; see the README).
var (
	step1Types   = walkthrough.Step1Types
	step1Flavors = []string{
		"gpustack--amd-epyc-7r13-linux-amd64-16c", "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64-1d",
		"gpustack--amd-epyc-7r32-linux-amd64-4c", "gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-1d",
		"gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-4d",
		"gpustack--intel-xeon-platinum-8259cl-linux-amd64-48c", "gpustack--intel-xeon-platinum-8259cl-linux-amd64-4c",
	}
)

// The walkthrough's Step 1: the operator composes the seed's flavors, queues, pools, catalog and ledgers from
// the four nodes.
var _ = Describe("the walkthrough's Step 1", func() {
	DescribeTable("kubectl shows what the seed shows",
		func(args []string, want [][]string) {
			Expect(cmp.Diff(want, kubectlTable(args...))).To(BeEmpty(), "kubectl %s: -want, +got", strings.Join(args, " "))
		},
		Entry("ResourceFlavors: Seven flavors, one per (gKey, [aKey,] os, arch, count)",
			[]string{"get", "resourceflavor", "-o", "custom-columns=NAME:.metadata.name"},
			column("NAME", step1Flavors...)),
		Entry("ClusterQueues: Three isolated queues, no cohort",
			[]string{"get", "clusterqueue"},
			[][]string{{"NAME", "COHORT", "PENDING WORKLOADS"},
				{"gpustack--generic-linux-amd64", "", "0"}, {"gpustack--nvidia-a10g-linux-amd64", "", "0"},
				{"gpustack--nvidia-tesla-t4-linux-amd64", "", "0"}}),
		Entry("InstanceTypeFlavors: The collapsed catalog",
			[]string{"get", "instancetypeflavor"},
			[][]string{
				{"NAME", "GENERALGROUP", "ACCELERATORGROUP", "ACCELERATABLE", "MANUFACTURER", "PRODUCT", "MEMORY", "CORES", "SLICEABLE"},
				{"gpustack--generic", "generic", "", "false", "generic", "", "", "", ""},
				{"gpustack--nvidia-a10g", "", "nvidia-a10g", "true", "nvidia", "NVIDIA-A10G", "24Gi", "10240", "true"},
				{"gpustack--nvidia-tesla-t4", "", "nvidia-tesla-t4", "true", "nvidia", "Tesla-T4", "16Gi", "2560", "true"},
			}),
		Entry("Devices: One ledger per accelerated node; none for node-cpu",
			[]string{"get", "devices", "-o", "custom-columns=NAME:.metadata.name"},
			column("NAME", "node-a10g", "node-t4-a", "node-t4-b")),
		Entry("NodeLabels: NFD carries the worker's and the device agent's labels onto node-a10g, as the seed's Node shows",
			[]string{"get", "node", "node-a10g", "-o", "custom-columns=" +
				"MANAGED:.metadata.labels.gpustack\\.ai/managed," +
				"CPU:.metadata.labels.general\\.feature\\.gpustack\\.ai/amd-epyc-7r32\\.count," +
				"PRODUCT:.metadata.labels.acceleratable\\.feature\\.gpustack\\.ai/nvidia-a10g\\.product," +
				"MEMORY:.metadata.labels.acceleratable\\.feature\\.gpustack\\.ai/nvidia-a10g\\.memory," +
				"COMCAP:.metadata.labels.acceleratable\\.feature\\.gpustack\\.ai/nvidia-a10g\\.comcap," +
				"DRIVER:.metadata.labels.acceleratable\\.feature\\.gpustack\\.ai/nvidia\\.driver-version"},
			[][]string{{"MANAGED", "CPU", "PRODUCT", "MEMORY", "COMCAP", "DRIVER"},
				{"true", "4", "NVIDIA-A10G", "24Gi", "8.6", "580.159.03"}}),
		Entry("EntranceQueues: Each pool has its entrance LocalQueue in every user namespace",
			[]string{"get", "localqueue", "-n", "default", "-o", "custom-columns=NAME:.metadata.name,CLUSTERQUEUE:.spec.clusterQueue"},
			[][]string{{"NAME", "CLUSTERQUEUE"},
				{"gpustack-fnv64-3b93966fd73eb9ec", "gpustack--generic-linux-amd64"},
				{"gpustack-fnv64-6b371caa2da0b799", "gpustack--nvidia-tesla-t4-linux-amd64"},
				{"gpustack-fnv64-c4680bb149644f1c", "gpustack--nvidia-a10g-linux-amd64"}}),
		Entry("Ledger: Each card starts free with 1,600,000 credits",
			[]string{"get", "devices", "node-a10g", "-o",
				"custom-columns=GROUP:.status.groups[0].id,MODE:.status.groups[0].accelerators[0].mode,REMAINING:.status.groups[0].accelerators[0].remaining"},
			[][]string{{"GROUP", "MODE", "REMAINING"}, {"a10g", "0", "1600000"}}),
	)
})

// Follows Step 2: flipping gpustack.ai/managed on the node's worker NodeFeature takes its card out
// of the A10G pool and its cores out of the generic pool, and back.
var _ = It("follows Step 2", func() {
	patch := func(v string) {
		kubectl("-n", "gpustack-system", "patch", "nodefeature", "node-a10g-gpustack-worker", "--type=merge",
			"-p", fmt.Sprintf(`{"spec":{"labels":{"gpustack.ai/managed":%q}}}`, v))
	}
	patch("false")
	DeferCleanup(func() { patch("true") })
	waitTable([][]string{
		step1Types[0],
		{"gpustack--generic-linux-amd64", "gpustack-fnv64-3b93966fd73eb9ec", "1/2Gi/100Gi", "0/0 0/0 0/0 0/0", "48/68", "Active"},
		{"gpustack--nvidia-a10g-linux-amd64", "gpustack-fnv64-c4680bb149644f1c", "8/64Gi/100Gi", "0/0 0/0 0/0 0/0", "0/0", "Active"},
		step1Types[3],
	}, "get", "instancetype")
	// The flavors go a moment after the pools change: Kueue's finalizer holds each until its queue lets go.
	eventually(time.Minute, func() (bool, string) {
		got := kubectlTable("get", "resourceflavor", "-o", "custom-columns=NAME:.metadata.name")
		return len(got) == 1+5, fmt.Sprintf("node-a10g's two flavors should be retired; flavors now: %v", got[1:])
	})
	patch("true")
	waitTable(step1Types, "get", "instancetype")
})

// Follows Step 5: CPU awareness splits the pools and the catalog by CPU key and leaves every
// ResourceFlavor unchanged; the collapsed pools remain (create-only).
var _ = It("follows Step 5", func() {
	setAware := func(v string) {
		kubectl("-n", "gpustack-system", "patch", "setting", "instance-type-aware-cpu-manufacturer", "--type=merge",
			"-p", fmt.Sprintf(`{"spec":{"value":%q}}`, v))
	}
	setAware("true")
	DeferCleanup(func() {
		setAware("false")
		kubectl("delete", "instancetype", "gpustack--amd-epyc-7r13-linux-amd64", "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64",
			"gpustack--amd-epyc-7r32-linux-amd64", "gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64",
			"gpustack--intel-xeon-platinum-8259cl-linux-amd64", "--wait=false")
	})
	waitTable([][]string{
		step1Types[0],
		{"gpustack--amd-epyc-7r13-linux-amd64", "gpustack-fnv64-8dde992f64a17a2f", "1/2Gi/100Gi", "0/0 0/0 0/0 0/0", "16/16", "Active"},
		{"gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64", "gpustack-fnv64-029fd9550e0c70bd", "8/64Gi/100Gi", "1/1 1/10 100/100 0/0", "0/0", "Active"},
		{"gpustack--amd-epyc-7r32-linux-amd64", "gpustack-fnv64-d3390f10cd57a632", "1/2Gi/100Gi", "0/0 0/0 0/0 0/0", "4/4", "Active"},
		step1Types[1],
		{"gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64", "gpustack-fnv64-5b59e508edc027b7", "8/32Gi/100Gi", "4/5 4/50 100/500 0/0", "0/0", "Active"},
		{"gpustack--intel-xeon-platinum-8259cl-linux-amd64", "gpustack-fnv64-c6aee2b7b5c4dc6b", "1/2Gi/100Gi", "0/0 0/0 0/0 0/0", "48/52", "Active"},
		step1Types[2], step1Types[3],
	}, "get", "instancetype")
	waitTable(column("NAME", "gpustack--amd-epyc-7r13", "gpustack--amd-epyc-7r32", "gpustack--amd-epyc-7r32--nvidia-a10g",
		"gpustack--intel-xeon-platinum-8259cl", "gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4"),
		"get", "instancetypeflavor", "-o", "custom-columns=NAME:.metadata.name")
	if diff := cmp.Diff(column("NAME", step1Flavors...), kubectlTable("get", "resourceflavor", "-o", "custom-columns=NAME:.metadata.name")); diff != "" {
		Fail(fmt.Sprintf("the flip must leave the flavors unchanged: -want, +got:\n%s", diff))
	}
	got := kubectlTable("get", "clusterqueue", "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64", "-o",
		"custom-columns=CPU:.metadata.labels.general\\.feature\\.gpustack\\.ai/amd-epyc-7r32")
	if diff := cmp.Diff([][]string{{"CPU"}, {"true"}}, got); diff != "" {
		Fail(fmt.Sprintf("the CPU-aware queue's labels carry the CPU key: -want, +got:\n%s", diff))
	}

	// Re-purpose a drained Instance as Step 5 does: stopped on a type that is gone, it is pointed at the
	// CPU-aware A10G pool with stop cleared, and runs.
	drained := builders.MakeInstance("default", "custom-demo-5", "a10g-12c128g").Accelerators(1).Stopped(true).Obj()
	Expect(k.Create(context.Background(), drained)).To(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), drained) })
	waitPhase("custom-demo-5", "Stopped")
	kubectl("patch", "instance", "custom-demo-5", "-n", "default", "--type=merge",
		"-p", `{"spec":{"type":"gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64","stop":false}}`)
	waitPhase("custom-demo-5", "Ready")
	eventually(time.Minute, func() (bool, string) {
		got := kubectl("get", "instancetype", "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64", "-o", "jsonpath={.status.summary.accelerator}")
		return got == "0/0 0/0 0/0 0/0", "the CPU-aware A10G pool gives its card to custom-demo-5: " + got
	})
})

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

// Follows Step 5's other path: patching the gpustack-settings Secret and restarting the
// worker. The worker's start-up (settings.Ensure) copies the Secret onto the Setting; patching the Setting
// afterwards writes back to the Secret, so a later restart never reverts it.
var _ = It("follows Step 5's other path", func() {
	ctx := context.Background()
	name := workerv1.SettingInstanceHostPathVolumeAllowed
	kubectl("-n", "gpustack-system", "patch", "secret", settings.SecretName, "--type=merge",
		"-p", fmt.Sprintf(`{"stringData":{%q:"true"}}`, name))
	DeferCleanup(func() {
		kubectl("-n", "gpustack-system", "patch", "setting", name, "--type=merge", "-p", `{"spec":{"value":"false"}}`)
	})
	Expect(settings.Ensure(ctx, k)).To(Succeed())
	s := &workerv1.Setting{}
	Expect(k.Get(ctx, client.ObjectKey{Namespace: "gpustack-system", Name: name}, s)).To(Succeed())
	if s.Spec.Value != "true" {
		Fail(fmt.Sprintf("after a restart the Setting %s holds %q; the Secret said true", name, s.Spec.Value))
	}
	kubectl("-n", "gpustack-system", "patch", "setting", name, "--type=merge", "-p", `{"spec":{"value":"false"}}`)
	eventually(30*time.Second, func() (bool, string) {
		secret := &corev1.Secret{}
		if err := k.Get(ctx, client.ObjectKey{Namespace: "gpustack-system", Name: settings.SecretName}, secret); err != nil {
			return false, err.Error()
		}
		return string(secret.Data[name]) == "false", fmt.Sprintf("the Secret holds %q", secret.Data[name])
	})
})

// createAuthoredType creates Step 4's administrator-authored A10G type, deleted when the test ends.
func createAuthoredType() {
	GinkgoHelper()
	it := builders.MakeInstanceType("a10g-12c128g").Accelerated("nvidia-a10g").Unit("12", "128Gi").LocalStorage("200Gi").Obj()
	Expect(k.Create(context.Background(), it)).To(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), it) })
}

// Follows Step 4's first half: an administrator's InstanceType becomes a sibling pool on the
// same card, with its own unit and entrance (FNV-1a of its name, not the walkthrough's stale hash), and
// deleting it removes its queue before the type goes.
var _ = It("follows Step 4's first half", func() {
	createAuthoredType()
	waitTable([][]string{
		step1Types[0],
		{"a10g-12c128g", "gpustack-fnv64-d4c0e6cd72686015", "12/128Gi/200Gi", "1/1 1/10 100/100 0/0", "0/0", "Active"},
		step1Types[1], step1Types[2], step1Types[3],
	}, "get", "instancetype")
	if got := kubectlTable("get", "clusterqueue", "a10g-12c128g", "-o", "custom-columns=QUOTA:.spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"); got[1][0] != "1600k" {
		Fail(fmt.Sprintf("the authored pool's queue covers %v credits, want 1600k", got[1]))
	}
	kubectl("delete", "instancetype", "a10g-12c128g", "--wait=false")
	waitTable(step1Types, "get", "instancetype")
	eventually(time.Minute, func() (bool, string) {
		out := kubectl("get", "clusterqueue", "--no-headers", "-o", "custom-columns=NAME:.metadata.name")
		return !strings.Contains(out, "a10g-12c128g"), "the authored pool's queue is still there"
	})
})

// Follows the walkthrough's Step 3: sliced-demo, 20 % of the A10G, goes Ready through Kueue and the
// scheduler; the ledger charges the slice on the card and the A10G row reads 0/0 0/0 80/80 0/0; deleting it
// returns the row.
var _ = It("follows the walkthrough's Step 3", func() {
	// The worker's metrics show the same views as the table, before, during and after the slice.
	sliced := func() float64 {
		return poolMetric("gpustack_instancetype_remaining", "gpustack--nvidia-a10g-linux-amd64", "sliced")
	}
	Expect(sliced()).To(Equal(100.0), "the A10G pool's free slice units before the slice")
	kubectl("apply", "-f", testenv.Path("examples", "instances", "sliced-demo.yaml"))
	DeferCleanup(func() { kubectl("delete", "instance", "sliced-demo", "-n", "default", "--ignore-not-found") })
	eventually(2*time.Minute, func() (bool, string) {
		out := kubectl("get", "instance", "sliced-demo", "-n", "default", "-o", "jsonpath={.status.phase}: {.status.phaseMessage}")
		return strings.HasPrefix(out, "Ready"), "sliced-demo: " + out
	})
	a10g := func(views string) []string {
		return []string{"gpustack--nvidia-a10g-linux-amd64", "gpustack-fnv64-c4680bb149644f1c", "8/64Gi/100Gi", views, "0/0", "Active"}
	}
	waitTable([][]string{step1Types[0], step1Types[1], a10g("0/0 0/0 80/80 0/0"), step1Types[3]}, "get", "instancetype")
	Expect(sliced()).To(Equal(80.0), "the A10G pool's free slice units with the slice running")
	if got := kubectl("get", "pod", "sliced-demo", "-n", "default", "-o", "jsonpath={.spec.nodeName} {.metadata.annotations.device\\.gpustack\\.ai/accelerator\\.allocated}"); !strings.HasPrefix(got, "node-a10g {\"main\":[\"GPU-") {
		Fail(fmt.Sprintf("the slice's Pod runs on node-a10g with its card recorded: %q", got))
	}
	eventually(time.Minute, func() (bool, string) {
		got := kubectl("get", "instance", "sliced-demo", "-n", "default", "-o", "jsonpath={.status.allocations} {.status.accessAddresses} {.status.hostIPs}")
		fields := strings.Fields(got)
		return len(fields) == 3 && strings.HasPrefix(fields[0], `["GPU-`) && fields[1] == fields[2],
			"the Instance shows its card and, with no access setting, its node's IP as its address: " + got
	})
	// The node's fit label says how big a slice its freest card still takes, 80 % of a card in credits.
	fit := func() string {
		return kubectl("get", "node", "node-a10g", "-o", `jsonpath={.metadata.labels.sliced-max-free-units\.fit\.gpustack\.ai/nvidia-a10g}`)
	}
	eventually(time.Minute, func() (bool, string) { return fit() == "1280000", "node-a10g's fit label: " + fit() })
	kubectl("delete", "instance", "sliced-demo", "-n", "default")
	waitTable(step1Types, "get", "instancetype")
	Expect(sliced()).To(Equal(100.0), "the A10G pool's free slice units after the slice")
	eventually(time.Minute, func() (bool, string) { return fit() == "1600000", "node-a10g's fit label: " + fit() })
})

// poolMetric reads one view's gauge of an InstanceType from the worker's metrics endpoint.
func poolMetric(name, instanceType, view string) float64 {
	GinkgoHelper()
	return scrape(cluster.MetricsURL(), name, map[string]string{"instancetype": instanceType, "view": view})
}

// scrape reads the gauge of the series with these labels from a Prometheus endpoint.
func scrape(url, name string, want map[string]string) float64 {
	GinkgoHelper()
	resp, err := http.Get(url) //nolint:gosec // the local cluster's own endpoint
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(families).To(HaveKey(name))
	for _, m := range families[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if match {
			return m.GetGauge().GetValue()
		}
	}
	Fail(fmt.Sprintf("no %s%v at %s", name, want, url))
	return 0
}

// instancePhase reads an Instance's phase and message.
func instancePhase(name string) string {
	return kubectl("get", "instance", name, "-n", "default", "-o", "jsonpath={.status.phase}: {.status.phaseMessage}")
}

// waitPhase waits until the Instance's phase and message start with want.
func waitPhase(name, want string) {
	GinkgoHelper()
	eventually(2*time.Minute, func() (bool, string) {
		got := instancePhase(name)
		return strings.HasPrefix(got, want), fmt.Sprintf("%s: %q, want %q...", name, got, want)
	})
}

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
		got := instancePhase("sixty-5")
		return strings.HasPrefix(got, "Starting: waiting for a card with room: "), fmt.Sprintf("sixty-5: %q; workloads:\n%s", got,
			kubectl("get", "workloads", "-n", "default", "-o", "custom-columns=NAME:.metadata.name,FLAVOR:.status.admission.podSetAssignments[0].flavors.credits\\.gpustack\\.ai/nvidia,CHECKS:.status.admissionChecks[*].message"))
	})
	eventually(time.Minute, func() (bool, string) {
		got := instancePhase("sixty-5")
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

// Follows the walkthrough's Step 4: custom-demo takes the A10G through an authored sibling type and
// both rows drop to 0/0 0/0 0/0 0/0; deleting the type drains it, custom-demo stops and the derived pool is
// whole again; pointed at another type with stop cleared, custom-demo runs again (Step 5's re-purposing).
var _ = It("follows the walkthrough's Step 4", func() {
	ctx := context.Background()
	createAuthoredType()
	custom := func(views string) []string {
		return []string{"a10g-12c128g", "gpustack-fnv64-d4c0e6cd72686015", "12/128Gi/200Gi", views, "0/0", "Active"}
	}
	a10g := func(views string) []string {
		return []string{"gpustack--nvidia-a10g-linux-amd64", "gpustack-fnv64-c4680bb149644f1c", "8/64Gi/100Gi", views, "0/0", "Active"}
	}
	waitTable([][]string{step1Types[0], custom("1/1 1/10 100/100 0/0"), step1Types[1], step1Types[2], step1Types[3]}, "get", "instancetype")
	if got := kubectl("get", "instancetype", "a10g-12c128g", "-o", "jsonpath={.spec.product} {.spec.memory} {.spec.feature.logicalSliced.maxSize} {.metadata.labels.schedule\\.gpustack\\.ai/queue-entrance}"); got != "NVIDIA-A10G 24Gi 128 gpustack-fnv64-d4c0e6cd72686015" {
		Fail(fmt.Sprintf("the defaulting webhook enriches the authored type from the catalog and stamps its entrance: %q", got))
	}

	inst := builders.MakeInstance("default", "custom-demo", "a10g-12c128g").Accelerators(1).Obj()
	Expect(k.Create(ctx, inst)).To(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), inst) })
	waitPhase("custom-demo", "Ready")
	waitTable([][]string{step1Types[0], custom("0/0 0/0 0/0 0/0"), step1Types[1], a10g("0/0 0/0 0/0 0/0"), step1Types[3]}, "get", "instancetype")

	kubectl("delete", "instancetype", "a10g-12c128g", "--wait=false")
	waitPhase("custom-demo", "Stopped")
	waitTable(step1Types, "get", "instancetype")
	// kubectl describe tells the story: the type's queue drained (HoldAndDrain), and the Instance stopped.
	eventually(time.Minute, func() (bool, string) {
		got := kubectl("get", "events", "-n", "default", "-o", `jsonpath={range .items[*]}{.involvedObject.name}/{.reason}{"\n"}{end}`)
		return strings.Contains(got, "a10g-12c128g/Draining") && strings.Contains(got, "custom-demo/Drained"), "the events:\n" + got
	})
	if got := kubectl("get", "instance", "custom-demo", "-n", "default", "-o", "jsonpath={.spec.stop}"); got != "true" {
		Fail(fmt.Sprintf("the drained Instance carries spec.stop: true, got %q", got))
	}

	kubectl("patch", "instance", "custom-demo", "-n", "default", "--type=merge",
		"-p", `{"spec":{"type":"gpustack--nvidia-a10g-linux-amd64","stop":false}}`)
	waitPhase("custom-demo", "Ready")
	waitTable([][]string{step1Types[0], step1Types[1], a10g("0/0 0/0 0/0 0/0"), step1Types[3]}, "get", "instancetype")
})

// Follows the walkthrough's Step 6: pinned-demo's Pod carries the hostname nodeSelector and the
// four mounts, and becomes Ready on node-t4-b once its claim is bound; a pin to a node that does not exist is refused at creation by the worker's webhook; a pin the
// scheduler cannot satisfy waits with the scheduler's own reason in phaseMessage.
var _ = It("follows the walkthrough's Step 6", func() {
	setHostPath := func(v string) {
		kubectl("-n", "gpustack-system", "patch", "setting", "instance-host-path-volume-allowed", "--type=merge",
			"-p", fmt.Sprintf(`{"spec":{"value":%q}}`, v))
	}
	// pinned-demo mounts a directory of the node: the gate refuses it until the administrator allows it.
	cmd := exec.Command("kubectl", "apply", "--dry-run=server", "-f", testenv.Path("examples", "instances", "pinned-demo.yaml"))
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "instance-host-path-volume-allowed") {
		Fail(fmt.Sprintf("a hostPath volume is refused while instance-host-path-volume-allowed is off: %v\n%s", err, out))
	}
	setHostPath("true")
	DeferCleanup(func() { setHostPath("false") })
	eventually(time.Minute, func() (bool, string) {
		cmd := exec.Command("kubectl", "apply", "-f", testenv.Path("examples", "instances", "pinned-demo.yaml"))
		cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig)
		out, err := cmd.CombinedOutput()
		return err == nil, "pinned-demo once hostPath volumes are allowed: " + string(out)
	})
	DeferCleanup(func() { kubectl("delete", "instance", "pinned-demo", "-n", "default", "--ignore-not-found") })
	// The dataset volume does not exist yet: no Pod, and the status says why.
	waitPhase("pinned-demo", "Starting: waiting for volume datasets: no InstancePersistentVolume")
	ctx := context.Background()
	ipv := &workerv1.InstancePersistentVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "datasets"},
		Spec: workerv1.InstancePersistentVolumeSpec{Capacity: resource.MustParse("10Gi"), AccessMode: workerv1.ReadWriteMany}}
	Expect(k.Create(ctx, ipv)).To(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), ipv) })
	waitPhase("pinned-demo", "Starting: waiting for volume datasets: its claim is Pending, not bound")
	// An administrator provides a volume the claim binds to.
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "e2e-datasets"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/e2e-datasets"}}}}
	Expect(k.Create(ctx, pv)).To(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), pv) })
	eventually(time.Minute, func() (bool, string) {
		got := kubectl("get", "instancepersistentvolume", "datasets", "-n", "default", "-o", "jsonpath={.status.phase} {.status.volume}")
		return got == "Bound e2e-datasets", "the volume's status: " + got
	})
	eventually(time.Minute, func() (bool, string) {
		cmd := exec.Command("kubectl", "get", "pod", "pinned-demo", "-n", "default", "-o",
			"jsonpath={.spec.nodeSelector.kubernetes\\.io/hostname} {.spec.containers[0].volumeMounts[*].mountPath}")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig)
		out, _ := cmd.CombinedOutput()
		return string(out) == "node-t4-b /workspace /dev/shm /mnt/datasets /etc/model/config.json /mnt/host-cache",
			"pinned-demo's Pod: " + string(out)
	})
	// The pin also asks node-t4-b's own flavor, so Kueue assigns the 4-card flavor and the Pod runs there.
	waitPhase("pinned-demo", "Ready")
	if got := kubectl("get", "instance", "pinned-demo", "-n", "default", "-o", "jsonpath={.status.nodeName}"); got != "node-t4-b" {
		Fail(fmt.Sprintf("pinned-demo runs on node-t4-b, got %q", got))
	}
	if got := kubectl("get", "workload", "-n", "default", "-o", `jsonpath={range .items[?(@.metadata.ownerReferences[0].name=="pinned-demo")]}{.status.admission.podSetAssignments[0].flavors}{end}`); !strings.Contains(got, "-4d") {
		Fail(fmt.Sprintf("Kueue assigns pinned-demo the flavor of node-t4-b's four cards, got %q", got))
	}

	gone := builders.MakeInstance("default", "pinned-gone", "gpustack--nvidia-tesla-t4-linux-amd64").Accelerators(1).NodeName("node-gone").Obj()
	err := k.Create(ctx, gone)
	if err == nil || !strings.Contains(err.Error(), `spec.nodeName: Not found: "node-gone"`) {
		Fail(fmt.Sprintf("a pin to a missing node is refused at creation, naming the field: %v", err))
		_ = k.Delete(context.Background(), gone)
	}

	// node-cpu has no T4: Kueue admits the T4 pool's quota, and the per-card check, which judges a Pod only on
	// the nodes it may go to, finds none in the pool and holds it there, saying why.
	nowhere := builders.MakeInstance("default", "pinned-nowhere", "gpustack--nvidia-tesla-t4-linux-amd64").Accelerators(1).NodeName("node-cpu").Obj()
	Expect(k.Create(context.Background(), nowhere)).To(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), nowhere) })
	waitPhase("pinned-nowhere", "Starting: waiting for a card with room: ")
	Expect(instancePhase("pinned-nowhere")).To(HaveSuffix("cannot take 1 whole card(s) now: no node of the flavor matches the Pods' node selector and affinity"))
})

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
