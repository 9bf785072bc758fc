package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/instancepod"
	"github.com/gpustack/gpustack-operator/internal/settings"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
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
		Entry("NodeLabels: NFD carries the worker's and the device manager's labels onto node-a10g, as the seed's Node shows",
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
	setManaged("node-a10g", "false")
	DeferCleanup(func() { setManaged("node-a10g", "true") })
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
	setManaged("node-a10g", "true")
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
	Expect(settings.Ensure(ctx, k, noEnv)).To(BeEmpty(), "problems at start-up")
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
	// Step 3 runs under Pod Security baseline: the namespace admits no Pod that needs more, the SSH sidecar's
	// included (it adds no capability, SYS_ADMIN and SYS_PTRACE least of all).
	kubectl("label", "namespace", "default", "pod-security.kubernetes.io/enforce=baseline")
	DeferCleanup(func() { kubectl("label", "namespace", "default", "pod-security.kubernetes.io/enforce-") })
	createSlicedDemo()
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
	if got := kubectl("get", "pod", "sliced-demo", "-n", "default", "-o", "jsonpath={.spec.imagePullSecrets[*].name}"); !strings.Contains(got, "sliced-demo-pull") {
		Fail(fmt.Sprintf("the Pod pulls with the InstanceImagePullSecret's Secret: %q", got))
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
	sliceInsideAndOverSSH()
	kubectl("delete", "instance", "sliced-demo", "-n", "default")
	waitTable(step1Types, "get", "instancetype")
	Expect(sliced()).To(Equal(100.0), "the A10G pool's free slice units after the slice")
	eventually(time.Minute, func() (bool, string) { return fit() == "1600000", "node-a10g's fit label: " + fit() })
})

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
	// The ConfigMap whose key pinned-demo mounts as a file; the kubelet starts no container without it.
	config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "model-config"},
		Data: map[string]string{"config.json": `{"model": "demo"}`}}
	Expect(k.Create(context.Background(), config)).To(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), config) })
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
	// The volume names its type: the chart's local-path class, as users who may not read StorageClasses see it.
	if got := kubectl("get", "instancepersistentvolumetype", "local-path", "-o", "jsonpath={.spec.provisioner} {.spec.default} {.spec.bindingMode}"); got != "rancher.io/local-path true WaitForFirstConsumer" {
		Fail(fmt.Sprintf("the local-path class's InstancePersistentVolumeType: %q", got))
	}
	ipv := &workerv1.InstancePersistentVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "datasets"},
		Spec: workerv1.InstancePersistentVolumeSpec{Type: "local-path", Capacity: resource.MustParse("1Gi"), AccessMode: workerv1.ReadWriteOnce}}
	Expect(k.Create(ctx, ipv)).To(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), ipv) })
	// Nobody writes a PersistentVolume: the chart's provisioner makes the claim's volume on the node the
	// scheduler picks for the Pod (its class waits for the first consumer).
	eventually(2*time.Minute, func() (bool, string) {
		got := kubectl("get", "instancepersistentvolume", "datasets", "-n", "default", "-o", "jsonpath={.status.phase} {.status.volume}")
		return strings.HasPrefix(got, "Bound pvc-"), "the volume's status: " + got
	})
	volume := kubectl("get", "instancepersistentvolume", "datasets", "-n", "default", "-o", "jsonpath={.status.volume}")
	if got := kubectl("get", "pv", volume, "-o", `jsonpath={.metadata.annotations.pv\.kubernetes\.io/provisioned-by} {.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}`); got != "rancher.io/local-path node-t4-b" {
		Fail(fmt.Sprintf("the dataset volume is the local-path provisioner's on node-t4-b: %q", got))
	}
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
	// Each mount is there, in the real container: the dataset writable, the ConfigMap key as a file, the node's
	// directory.
	if got := kubectl("exec", "pinned-demo", "-n", "default", "-c", instancepod.MainContainer, "--", "sh", "-c",
		"echo kept > /mnt/datasets/file && cat /mnt/datasets/file /etc/model/config.json && test -d /mnt/host-cache && echo host-cache"); got != "kept\n{\"model\": \"demo\"}host-cache\n" {
		Fail(fmt.Sprintf("pinned-demo's mounts: %q", got))
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
	Expect(suite.InstancePhase("pinned-nowhere")).To(HaveSuffix("cannot take 1 whole card(s) now: no node of the flavor matches the Pods' node selector and affinity"))
})

// noEnv is an environment without variables: nothing seeds a Setting.
func noEnv(string) string { return "" }

// createSlicedDemo creates the walkthrough's sliced-demo with an InstanceSSHPublicKey (its private half in
// sshDir), an InstanceImagePullSecret and port 22 exposed. The image is on the nodes already, so the pull
// secret is handed to the kubelet and never used; the key is, by every SSH session the specs open.
func createSlicedDemo() {
	GinkgoHelper()
	ctx := context.Background()
	key := &workerv1.InstanceSSHPublicKey{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sliced-demo-key"},
		Spec: workerv1.InstanceSSHPublicKeySpec{Data: sshKey(sshDir)}}
	pull := &workerv1.InstanceImagePullSecret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sliced-demo-pull"},
		Spec: workerv1.InstanceImagePullSecretSpec{Registry: "docker.io", Username: "demo", Password: "demo-token"}}
	Expect(k.Create(ctx, key)).To(Succeed())
	Expect(k.Create(ctx, pull)).To(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), key); _ = k.Delete(context.Background(), pull) })
	data, err := os.ReadFile(testenv.Path("examples", "instances", "sliced-demo.yaml"))
	Expect(err).NotTo(HaveOccurred())
	inst := &workerv1.Instance{}
	Expect(yaml.Unmarshal(data, inst)).To(Succeed())
	inst.Spec.SSHPublicKey = key.Name
	inst.Spec.ImagePullSecret = pull.Name
	inst.Spec.Ports = []workerv1.InstancePort{{Name: "ssh", Port: 22}}
	Expect(k.Create(ctx, inst)).To(Succeed())
	// Both are backed by Secrets of their names, which the Pod uses.
	for _, kind := range []string{"instancesshpublickey/sliced-demo-key", "instanceimagepullsecret/sliced-demo-pull"} {
		eventually(time.Minute, func() (bool, string) {
			got := kubectl("get", kind, "-n", "default", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].reason} {.status.secret}`)
			return got == "SecretCreated "+strings.Split(kind, "/")[1], kind + "'s status: " + got
		})
	}
}

// sshDir holds the spec's SSH key and known hosts.
var sshDir string

var _ = BeforeEach(func() { sshDir = GinkgoT().TempDir() })

// sliceInsideAndOverSSH checks sliced-demo from inside, as Step 3 does: its main container holds the card the
// agent's Allocate made visible and the slice's budget, and every dynamically linked process preloads the
// enforcer the agent copied to the node (the stand-in says at HAMi-core's debug level the budget it was given);
// ssh from this machine through the Instance's Service, trusting only the host key the worker keeps for it,
// reaches a shell in main that sees the same, in the workspace, without any capability. The Pod runs in a
// namespace that enforces Pod Security's baseline level.
func sliceInsideAndOverSSH() {
	GinkgoHelper()
	ctx := context.Background()
	cards, err := simulated.New(inventoryNode("node-a10g")).Detect(ctx)
	Expect(err).NotTo(HaveOccurred())
	card := cards[0]
	budget := strconv.FormatInt(card.MemoryMiB*20/100, 10) + "m"
	want := []string{"NVIDIA_VISIBLE_DEVICES=" + card.UUID, "CUDA_DEVICE_MEMORY_LIMIT_0=" + budget, "CUDA_DEVICE_SM_LIMIT=100",
		"[gpustack enforcer stand-in] devices " + card.UUID + " memory " + budget + " cores 100%"}
	// The stand-in speaks on standard error, here one stream with the variables.
	session := "env LIBCUDA_LOG_LEVEL=4 true 2>&1; env"
	out := kubectl("exec", "sliced-demo", "-n", "default", "-c", instancepod.MainContainer, "--", "sh", "-c", session)
	Expect(missingLines(out, want)).To(BeEmpty(), "kubectl exec sliced-demo -- env:\n%s", out)

	// The Pod was admitted under Pod Security baseline, which its namespace still enforces.
	pod := &corev1.Pod{}
	Expect(k.Get(ctx, client.ObjectKey{Namespace: "default", Name: "sliced-demo"}, pod)).To(Succeed())
	level := kubectl("get", "namespace", "default", "-o", `jsonpath={.metadata.labels.pod-security\.kubernetes\.io/enforce}`)
	Expect(level).To(Equal("baseline"), "the Pod Security level sliced-demo's Pod was admitted under")

	hostKeys := &corev1.Secret{}
	Expect(k.Get(ctx, client.ObjectKey{Namespace: "default", Name: "sliced-demo-ssh-host-keys"}, hostKeys)).To(Succeed())
	svc := &corev1.Service{}
	Expect(k.Get(ctx, client.ObjectKey{Namespace: "default", Name: "sliced-demo"}, svc)).To(Succeed())
	Expect(svc.Spec.Ports).To(HaveLen(1))
	port := strconv.Itoa(int(svc.Spec.Ports[0].NodePort))
	knownHosts := filepath.Join(sshDir, "known_hosts")
	Expect(os.WriteFile(knownHosts, []byte("["+pod.Status.HostIP+"]:"+port+" "+string(hostKeys.Data[instancepod.HostPublicKeyFile])), 0o600)).To(Succeed())
	session += "; grep -E '^Cap(Eff|Bnd)' /proc/self/status; echo cwd=$(pwd)"
	var got string
	eventually(time.Minute, func() (bool, string) {
		cmd := exec.CommandContext(ctx, "ssh", "-i", filepath.Join(sshDir, "id_ed25519"), "-o", "UserKnownHostsFile="+knownHosts,
			"-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
			"-p", port, "root@"+pod.Status.HostIP, session)
		b, err := cmd.CombinedOutput()
		got = string(b)
		return err == nil, fmt.Sprintf("ssh: %v\n%s", err, b)
	})
	want = append(want, "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "cwd="+workerv1.DefaultVolumeMount)
	Expect(missingLines(got, want)).To(BeEmpty(), "ssh into sliced-demo:\n%s", got)
}

// inventoryNode is the inventory's entry of a node.
func inventoryNode(name string) simulated.Node {
	for _, n := range inv.Nodes {
		if n.Name == name {
			return n
		}
	}
	return simulated.Node{}
}
