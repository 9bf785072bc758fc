package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
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
	"github.com/gpustack/gpustack-operator/test/walkthrough"
)

// The seed's Step 1 tables, SH once-max as card counts (DESIGN.md).
var (
	step1Types   = walkthrough.Step1Types
	step1Flavors = []string{
		"gpustack--amd-epyc-7r13-linux-amd64-16c", "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64-1d",
		"gpustack--amd-epyc-7r32-linux-amd64-4c", "gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-1d",
		"gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-4d",
		"gpustack--intel-xeon-platinum-8259cl-linux-amd64-48c", "gpustack--intel-xeon-platinum-8259cl-linux-amd64-4c",
	}
)

// TestStep1 follows the walkthrough's Step 1: the operator composes the seed's flavors, queues, pools,
// catalog and ledgers from the four nodes.
func TestStep1(t *testing.T) {
	skipWithoutCluster(t)
	waitTable(t, step1Types, "get", "instancetype")
	cases := map[string]struct {
		reason string
		args   []string
		want   [][]string
	}{
		"ResourceFlavors": {
			reason: "Seven flavors, one per (gKey, [aKey,] os, arch, count).",
			args:   []string{"get", "resourceflavor", "-o", "custom-columns=NAME:.metadata.name"},
			want:   column("NAME", step1Flavors...),
		},
		"ClusterQueues": {
			reason: "Three isolated queues, no cohort.",
			args:   []string{"get", "clusterqueue"},
			want: [][]string{{"NAME", "COHORT", "PENDING WORKLOADS"},
				{"gpustack--generic-linux-amd64", "", "0"}, {"gpustack--nvidia-a10g-linux-amd64", "", "0"},
				{"gpustack--nvidia-tesla-t4-linux-amd64", "", "0"}},
		},
		"InstanceTypeFlavors": {
			reason: "The collapsed catalog.",
			args:   []string{"get", "instancetypeflavor"},
			want: [][]string{
				{"NAME", "GENERALGROUP", "ACCELERATORGROUP", "ACCELERATABLE", "MANUFACTURER", "PRODUCT", "MEMORY", "CORES", "SLICEABLE"},
				{"gpustack--generic", "generic", "", "false", "generic", "", "", "", ""},
				{"gpustack--nvidia-a10g", "", "nvidia-a10g", "true", "nvidia", "NVIDIA-A10G", "24Gi", "10240", "true"},
				{"gpustack--nvidia-tesla-t4", "", "nvidia-tesla-t4", "true", "nvidia", "Tesla-T4", "16Gi", "2560", "true"},
			},
		},
		"Devices": {
			reason: "One ledger per accelerated node; none for node-cpu.",
			args:   []string{"get", "devices", "-o", "custom-columns=NAME:.metadata.name"},
			want:   column("NAME", "node-a10g", "node-t4-a", "node-t4-b"),
		},
		"NodeLabels": {
			reason: "NFD carries the worker's and the device agent's labels onto node-a10g, as the seed's Node shows.",
			args: []string{"get", "node", "node-a10g", "-o", "custom-columns=" +
				"MANAGED:.metadata.labels.gpustack\\.ai/managed," +
				"CPU:.metadata.labels.general\\.feature\\.gpustack\\.ai/amd-epyc-7r32\\.count," +
				"PRODUCT:.metadata.labels.acceleratable\\.feature\\.gpustack\\.ai/nvidia-a10g\\.product," +
				"MEMORY:.metadata.labels.acceleratable\\.feature\\.gpustack\\.ai/nvidia-a10g\\.memory," +
				"COMCAP:.metadata.labels.acceleratable\\.feature\\.gpustack\\.ai/nvidia-a10g\\.comcap," +
				"DRIVER:.metadata.labels.acceleratable\\.feature\\.gpustack\\.ai/nvidia\\.driver-version"},
			want: [][]string{{"MANAGED", "CPU", "PRODUCT", "MEMORY", "COMCAP", "DRIVER"},
				{"true", "4", "NVIDIA-A10G", "24Gi", "8.6", "580.159.03"}},
		},
		"EntranceQueues": {
			reason: "Each pool has its entrance LocalQueue in every user namespace.",
			args:   []string{"get", "localqueue", "-n", "default", "-o", "custom-columns=NAME:.metadata.name,CLUSTERQUEUE:.spec.clusterQueue"},
			want: [][]string{{"NAME", "CLUSTERQUEUE"},
				{"gpustack-fnv64-3b93966fd73eb9ec", "gpustack--generic-linux-amd64"},
				{"gpustack-fnv64-6b371caa2da0b799", "gpustack--nvidia-tesla-t4-linux-amd64"},
				{"gpustack-fnv64-c4680bb149644f1c", "gpustack--nvidia-a10g-linux-amd64"}},
		},
		"Ledger": {
			reason: "Each card starts free with 1,600,000 credits.",
			args: []string{"get", "devices", "node-a10g", "-o",
				"custom-columns=GROUP:.status.groups[0].id,MODE:.status.groups[0].accelerators[0].mode,REMAINING:.status.groups[0].accelerators[0].remaining"},
			want: [][]string{{"GROUP", "MODE", "REMAINING"}, {"a10g", "0", "1600000"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, kubectlTable(t, tc.args...)); diff != "" {
				t.Errorf("%s\nkubectl %s: -want, +got:\n%s", tc.reason, strings.Join(tc.args, " "), diff)
			}
		})
	}
}

// TestStep2 follows Step 2: flipping gpustack.ai/managed on the node's worker NodeFeature takes its card out
// of the A10G pool and its cores out of the generic pool, and back.
func TestStep2(t *testing.T) {
	skipWithoutCluster(t)
	waitTable(t, step1Types, "get", "instancetype")
	patch := func(v string) {
		kubectl(t, "-n", "gpustack-system", "patch", "nodefeature", "node-a10g-gpustack-worker", "--type=merge",
			"-p", fmt.Sprintf(`{"spec":{"labels":{"gpustack.ai/managed":%q}}}`, v))
	}
	patch("false")
	t.Cleanup(func() { patch("true") })
	waitTable(t, [][]string{
		step1Types[0],
		{"gpustack--generic-linux-amd64", "gpustack-fnv64-3b93966fd73eb9ec", "1/2Gi/100Gi", "0/0 0/0 0/0 0/0", "48/68", "Active"},
		{"gpustack--nvidia-a10g-linux-amd64", "gpustack-fnv64-c4680bb149644f1c", "8/64Gi/100Gi", "0/0 0/0 0/0 0/0", "0/0", "Active"},
		step1Types[3],
	}, "get", "instancetype")
	// The flavors go a moment after the pools change: Kueue's finalizer holds each until its queue lets go.
	eventually(t, time.Minute, func() (bool, string) {
		got := kubectlTable(t, "get", "resourceflavor", "-o", "custom-columns=NAME:.metadata.name")
		return len(got) == 1+5, fmt.Sprintf("node-a10g's two flavors should be retired; flavors now: %v", got[1:])
	})
	patch("true")
	waitTable(t, step1Types, "get", "instancetype")
}

// TestStep5 follows Step 5: CPU awareness splits the pools and the catalog by CPU key and leaves every
// ResourceFlavor unchanged; the collapsed pools remain (create-only).
func TestStep5(t *testing.T) {
	skipWithoutCluster(t)
	waitTable(t, step1Types, "get", "instancetype")
	setAware := func(v string) {
		kubectl(t, "-n", "gpustack-system", "patch", "setting", "instance-type-aware-cpu-manufacturer", "--type=merge",
			"-p", fmt.Sprintf(`{"spec":{"value":%q}}`, v))
	}
	setAware("true")
	t.Cleanup(func() {
		setAware("false")
		kubectl(t, "delete", "instancetype", "gpustack--amd-epyc-7r13-linux-amd64", "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64",
			"gpustack--amd-epyc-7r32-linux-amd64", "gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64",
			"gpustack--intel-xeon-platinum-8259cl-linux-amd64", "--wait=false")
	})
	waitTable(t, [][]string{
		step1Types[0],
		{"gpustack--amd-epyc-7r13-linux-amd64", "gpustack-fnv64-8dde992f64a17a2f", "1/2Gi/100Gi", "0/0 0/0 0/0 0/0", "16/16", "Active"},
		{"gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64", "gpustack-fnv64-029fd9550e0c70bd", "8/64Gi/100Gi", "1/1 1/10 100/100 0/0", "0/0", "Active"},
		{"gpustack--amd-epyc-7r32-linux-amd64", "gpustack-fnv64-d3390f10cd57a632", "1/2Gi/100Gi", "0/0 0/0 0/0 0/0", "4/4", "Active"},
		step1Types[1],
		{"gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64", "gpustack-fnv64-5b59e508edc027b7", "8/32Gi/100Gi", "4/5 4/50 100/500 0/0", "0/0", "Active"},
		{"gpustack--intel-xeon-platinum-8259cl-linux-amd64", "gpustack-fnv64-c6aee2b7b5c4dc6b", "1/2Gi/100Gi", "0/0 0/0 0/0 0/0", "48/52", "Active"},
		step1Types[2], step1Types[3],
	}, "get", "instancetype")
	waitTable(t, column("NAME", "gpustack--amd-epyc-7r13", "gpustack--amd-epyc-7r32", "gpustack--amd-epyc-7r32--nvidia-a10g",
		"gpustack--intel-xeon-platinum-8259cl", "gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4"),
		"get", "instancetypeflavor", "-o", "custom-columns=NAME:.metadata.name")
	if diff := cmp.Diff(column("NAME", step1Flavors...), kubectlTable(t, "get", "resourceflavor", "-o", "custom-columns=NAME:.metadata.name")); diff != "" {
		t.Errorf("the flip must leave the flavors unchanged: -want, +got:\n%s", diff)
	}
	got := kubectlTable(t, "get", "clusterqueue", "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64", "-o",
		"custom-columns=CPU:.metadata.labels.general\\.feature\\.gpustack\\.ai/amd-epyc-7r32")
	if diff := cmp.Diff([][]string{{"CPU"}, {"true"}}, got); diff != "" {
		t.Errorf("the CPU-aware queue's labels carry the CPU key: -want, +got:\n%s", diff)
	}

	// Re-purpose a drained Instance as Step 5 does: stopped on a type that is gone, it is pointed at the
	// CPU-aware A10G pool with stop cleared, and runs.
	drained := builders.MakeInstance("default", "custom-demo-5", "a10g-12c128g").Accelerators(1).Stopped(true).Obj()
	if err := k.Create(context.Background(), drained); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), drained) })
	waitPhase(t, "custom-demo-5", "Stopped")
	kubectl(t, "patch", "instance", "custom-demo-5", "-n", "default", "--type=merge",
		"-p", `{"spec":{"type":"gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64","stop":false}}`)
	waitPhase(t, "custom-demo-5", "Ready")
	eventually(t, time.Minute, func() (bool, string) {
		got := kubectl(t, "get", "instancetype", "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64", "-o", "jsonpath={.status.summary.accelerator}")
		return got == "0/0 0/0 0/0 0/0", "the CPU-aware A10G pool gives its card to custom-demo-5: " + got
	})
}

// TestUnreadableNode gives a node a label the composer cannot read: the node gets an event naming the label
// and leaves the pools, and the rest of the cluster is still composed.
func TestUnreadableNode(t *testing.T) {
	skipWithoutCluster(t)
	waitTable(t, step1Types, "get", "instancetype")
	kubectl(t, "label", "node", "node-cpu", "general.feature.gpustack.ai/bogus.count=many")
	t.Cleanup(func() { kubectl(t, "label", "node", "node-cpu", "general.feature.gpustack.ai/bogus.count-") })
	waitTable(t, [][]string{
		step1Types[0],
		{"gpustack--generic-linux-amd64", "gpustack-fnv64-3b93966fd73eb9ec", "1/2Gi/100Gi", "0/0 0/0 0/0 0/0", "48/56", "Active"},
		step1Types[2], step1Types[3],
	}, "get", "instancetype")
	eventually(t, 30*time.Second, func() (bool, string) {
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
}

// TestResyncWritesNothing forces 100 recomputes of the converged chain through a client that counts every
// write, and expects none.
func TestResyncWritesNothing(t *testing.T) {
	skipWithoutCluster(t)
	waitTable(t, step1Types, "get", "instancetype")
	c, err := client.NewWithWatch(cluster.RESTConfig, client.Options{Scheme: k.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	counting, writes := testenv.CountWrites(c)
	r := &composer.Reconciler{Client: counting, Recorder: record.NewFakeRecorder(100)}
	ctx := log.IntoContext(context.Background(), log.Log)
	for i := 0; i < 100; i++ {
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "chain"}}); err != nil {
			t.Fatalf("resync %d: %v", i, err)
		}
	}
	if got := writes.List(); len(got) != 0 {
		t.Errorf("100 resyncs of a converged chain made %d API writes, want 0: %v", len(got), got)
	}
}

// TestPlanYAMLValidates checks that `plan -o yaml` yields objects the API server accepts.
func TestPlanYAMLValidates(t *testing.T) {
	skipWithoutCluster(t)
	bin, _, _ := testenv.BinDir()
	planCmd := exec.Command(bin+"/gpustack-operator", "plan", "--inventory", testenv.Path("examples", "clusters", "walkthrough.yaml"), "-o", "yaml")
	out, err := planCmd.Output()
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	apply := exec.Command("kubectl", "apply", "--dry-run=server", "-f", "-")
	apply.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig)
	apply.Stdin = strings.NewReader(string(out))
	if b, err := apply.CombinedOutput(); err != nil {
		t.Errorf("the API server refuses plan's objects: %v\n%s", err, b)
	}
}

// TestSettingsSecretSeeds follows Step 5's other path: patching the gpustack-settings Secret and restarting the
// worker. The worker's start-up (settings.Ensure) copies the Secret onto the Setting; patching the Setting
// afterwards writes back to the Secret, so a later restart never reverts it.
func TestSettingsSecretSeeds(t *testing.T) {
	skipWithoutCluster(t)
	ctx := context.Background()
	name := workerv1.SettingInstanceHostPathVolumeAllowed
	kubectl(t, "-n", "gpustack-system", "patch", "secret", settings.SecretName, "--type=merge",
		"-p", fmt.Sprintf(`{"stringData":{%q:"true"}}`, name))
	t.Cleanup(func() {
		kubectl(t, "-n", "gpustack-system", "patch", "setting", name, "--type=merge", "-p", `{"spec":{"value":"false"}}`)
	})
	if err := settings.Ensure(ctx, k); err != nil {
		t.Fatal(err)
	}
	s := &workerv1.Setting{}
	if err := k.Get(ctx, client.ObjectKey{Namespace: "gpustack-system", Name: name}, s); err != nil {
		t.Fatal(err)
	}
	if s.Spec.Value != "true" {
		t.Errorf("after a restart the Setting %s holds %q; the Secret said true", name, s.Spec.Value)
	}
	kubectl(t, "-n", "gpustack-system", "patch", "setting", name, "--type=merge", "-p", `{"spec":{"value":"false"}}`)
	eventually(t, 30*time.Second, func() (bool, string) {
		secret := &corev1.Secret{}
		if err := k.Get(ctx, client.ObjectKey{Namespace: "gpustack-system", Name: settings.SecretName}, secret); err != nil {
			return false, err.Error()
		}
		return string(secret.Data[name]) == "false", fmt.Sprintf("the Secret holds %q", secret.Data[name])
	})
}

// createAuthoredType creates Step 4's administrator-authored A10G type, deleted when the test ends.
func createAuthoredType(t *testing.T) {
	t.Helper()
	it := builders.MakeInstanceType("a10g-12c128g").Accelerated("nvidia-a10g").Unit("12", "128Gi").LocalStorage("200Gi").Obj()
	if err := k.Create(context.Background(), it); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), it) })
}

// TestAuthoredType follows Step 4's first half: an administrator's InstanceType becomes a sibling pool on the
// same card, with its own unit and entrance (FNV-1a of its name, not the walkthrough's stale hash), and
// deleting it removes its queue before the type goes.
func TestAuthoredType(t *testing.T) {
	skipWithoutCluster(t)
	waitTable(t, step1Types, "get", "instancetype")
	createAuthoredType(t)
	waitTable(t, [][]string{
		step1Types[0],
		{"a10g-12c128g", "gpustack-fnv64-d4c0e6cd72686015", "12/128Gi/200Gi", "1/1 1/10 100/100 0/0", "0/0", "Active"},
		step1Types[1], step1Types[2], step1Types[3],
	}, "get", "instancetype")
	if got := kubectlTable(t, "get", "clusterqueue", "a10g-12c128g", "-o", "custom-columns=QUOTA:.spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"); got[1][0] != "1600k" {
		t.Errorf("the authored pool's queue covers %v credits, want 1600k", got[1])
	}
	kubectl(t, "delete", "instancetype", "a10g-12c128g", "--wait=false")
	waitTable(t, step1Types, "get", "instancetype")
	eventually(t, time.Minute, func() (bool, string) {
		out := kubectl(t, "get", "clusterqueue", "--no-headers", "-o", "custom-columns=NAME:.metadata.name")
		return !strings.Contains(out, "a10g-12c128g"), "the authored pool's queue is still there"
	})
}

// TestStep3 follows the walkthrough's Step 3: sliced-demo, 20 % of the A10G, goes Ready through Kueue and the
// scheduler; the ledger charges the slice on the card and the A10G row reads 0/0 0/0 80/80 0/0; deleting it
// returns the row.
func TestStep3(t *testing.T) {
	skipWithoutCluster(t)
	waitTable(t, step1Types, "get", "instancetype")
	kubectl(t, "apply", "-f", testenv.Path("examples", "instances", "sliced-demo.yaml"))
	t.Cleanup(func() { kubectl(t, "delete", "instance", "sliced-demo", "-n", "default", "--ignore-not-found") })
	eventually(t, 2*time.Minute, func() (bool, string) {
		out := kubectl(t, "get", "instance", "sliced-demo", "-n", "default", "-o", "jsonpath={.status.phase}: {.status.phaseMessage}")
		return strings.HasPrefix(out, "Ready"), "sliced-demo: " + out
	})
	a10g := func(views string) []string {
		return []string{"gpustack--nvidia-a10g-linux-amd64", "gpustack-fnv64-c4680bb149644f1c", "8/64Gi/100Gi", views, "0/0", "Active"}
	}
	waitTable(t, [][]string{step1Types[0], step1Types[1], a10g("0/0 0/0 80/80 0/0"), step1Types[3]}, "get", "instancetype")
	if got := kubectl(t, "get", "pod", "sliced-demo", "-n", "default", "-o", "jsonpath={.spec.nodeName} {.metadata.annotations.device\\.gpustack\\.ai/accelerator\\.allocated}"); !strings.HasPrefix(got, "node-a10g {\"main\":[\"GPU-") {
		t.Errorf("the slice's Pod runs on node-a10g with its card recorded: %q", got)
	}
	kubectl(t, "delete", "instance", "sliced-demo", "-n", "default")
	waitTable(t, step1Types, "get", "instancetype")
}

// instancePhase reads an Instance's phase and message.
func instancePhase(t *testing.T, name string) string {
	return kubectl(t, "get", "instance", name, "-n", "default", "-o", "jsonpath={.status.phase}: {.status.phaseMessage}")
}

// waitPhase waits until the Instance's phase and message start with want.
func waitPhase(t *testing.T, name, want string) {
	t.Helper()
	eventually(t, 2*time.Minute, func() (bool, string) {
		got := instancePhase(t, name)
		return strings.HasPrefix(got, want), fmt.Sprintf("%s: %q, want %q...", name, got, want)
	})
}

// TestFragmentation runs the per-card check on the real Kueue: two 30 % slices share the A10G; on the five
// T4 cards five 60 % slices run, one per card, and a sixth, which quota would admit, waits for a card with
// room with the check's Retry message until one of the five goes.
func TestFragmentation(t *testing.T) {
	skipWithoutCluster(t)
	waitTable(t, step1Types, "get", "instancetype")
	eventually(t, time.Minute, func() (bool, string) {
		out := kubectl(t, "get", "clusterqueue", "gpustack--nvidia-tesla-t4-linux-amd64", "-o", "jsonpath={.spec.admissionChecksStrategy.admissionChecks[*].name}")
		return out == "gpustack-node-devices", "the T4 queue references the node-devices check: " + out
	})
	ctx := context.Background()
	create := func(name, typ string, pct int32) {
		t.Helper()
		inst := builders.MakeInstance("default", name, typ).Slice(pct, 100).Obj()
		if err := k.Create(ctx, inst); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k.Delete(context.Background(), inst) })
	}
	const a10g, t4 = "gpustack--nvidia-a10g-linux-amd64", "gpustack--nvidia-tesla-t4-linux-amd64"
	create("thirty-a", a10g, 30)
	create("thirty-b", a10g, 30)
	waitPhase(t, "thirty-a", "Ready")
	waitPhase(t, "thirty-b", "Ready")

	for i := 0; i < 5; i++ {
		create(fmt.Sprintf("sixty-%d", i), t4, 60)
	}
	for i := 0; i < 5; i++ {
		waitPhase(t, fmt.Sprintf("sixty-%d", i), "Ready")
	}
	create("sixty-5", t4, 60)
	eventually(t, 2*time.Minute, func() (bool, string) {
		got := instancePhase(t, "sixty-5")
		return strings.HasPrefix(got, "Starting: waiting for a card with room: "), fmt.Sprintf("sixty-5: %q; workloads:\n%s", got,
			kubectl(t, "get", "workloads", "-n", "default", "-o", "custom-columns=NAME:.metadata.name,FLAVOR:.status.admission.podSetAssignments[0].flavors.credits\\.gpustack\\.ai/nvidia,CHECKS:.status.admissionChecks[*].message"))
	})
	eventually(t, time.Minute, func() (bool, string) {
		got := instancePhase(t, "sixty-5")
		return strings.Contains(got, "the largest free piece is 40%"), "the wait names the largest free piece: " + got
	})
	kubectl(t, "delete", "instance", "sixty-0", "-n", "default")
	waitPhase(t, "sixty-5", "Ready")
}

// TestStep4 follows the walkthrough's Step 4: custom-demo takes the A10G through an authored sibling type and
// both rows drop to 0/0 0/0 0/0 0/0; deleting the type drains it, custom-demo stops and the derived pool is
// whole again; pointed at another type with stop cleared, custom-demo runs again (Step 5's re-purposing).
func TestStep4(t *testing.T) {
	skipWithoutCluster(t)
	waitTable(t, step1Types, "get", "instancetype")
	ctx := context.Background()
	createAuthoredType(t)
	custom := func(views string) []string {
		return []string{"a10g-12c128g", "gpustack-fnv64-d4c0e6cd72686015", "12/128Gi/200Gi", views, "0/0", "Active"}
	}
	a10g := func(views string) []string {
		return []string{"gpustack--nvidia-a10g-linux-amd64", "gpustack-fnv64-c4680bb149644f1c", "8/64Gi/100Gi", views, "0/0", "Active"}
	}
	waitTable(t, [][]string{step1Types[0], custom("1/1 1/10 100/100 0/0"), step1Types[1], step1Types[2], step1Types[3]}, "get", "instancetype")
	if got := kubectl(t, "get", "instancetype", "a10g-12c128g", "-o", "jsonpath={.spec.product} {.spec.memory} {.spec.feature.logicalSliced.maxSize} {.metadata.labels.schedule\\.gpustack\\.ai/queue-entrance}"); got != "NVIDIA-A10G 24Gi 128 gpustack-fnv64-d4c0e6cd72686015" {
		t.Errorf("the defaulting webhook enriches the authored type from the catalog and stamps its entrance: %q", got)
	}

	inst := builders.MakeInstance("default", "custom-demo", "a10g-12c128g").Accelerators(1).Obj()
	if err := k.Create(ctx, inst); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), inst) })
	waitPhase(t, "custom-demo", "Ready")
	waitTable(t, [][]string{step1Types[0], custom("0/0 0/0 0/0 0/0"), step1Types[1], a10g("0/0 0/0 0/0 0/0"), step1Types[3]}, "get", "instancetype")

	kubectl(t, "delete", "instancetype", "a10g-12c128g", "--wait=false")
	waitPhase(t, "custom-demo", "Stopped")
	waitTable(t, step1Types, "get", "instancetype")
	if got := kubectl(t, "get", "instance", "custom-demo", "-n", "default", "-o", "jsonpath={.spec.stop}"); got != "true" {
		t.Errorf("the drained Instance carries spec.stop: true, got %q", got)
	}

	kubectl(t, "patch", "instance", "custom-demo", "-n", "default", "--type=merge",
		"-p", `{"spec":{"type":"gpustack--nvidia-a10g-linux-amd64","stop":false}}`)
	waitPhase(t, "custom-demo", "Ready")
	waitTable(t, [][]string{step1Types[0], step1Types[1], a10g("0/0 0/0 0/0 0/0"), step1Types[3]}, "get", "instancetype")
}

// TestStep6 follows the walkthrough's Step 6: pinned-demo's Pod carries the hostname nodeSelector and the
// four mounts; a pin to a node that does not exist is refused at creation by the worker's webhook; a pin the
// scheduler cannot satisfy waits with the scheduler's own reason in phaseMessage.
func TestStep6(t *testing.T) {
	skipWithoutCluster(t)
	waitTable(t, step1Types, "get", "instancetype")
	setHostPath := func(v string) {
		kubectl(t, "-n", "gpustack-system", "patch", "setting", "instance-host-path-volume-allowed", "--type=merge",
			"-p", fmt.Sprintf(`{"spec":{"value":%q}}`, v))
	}
	// pinned-demo mounts a directory of the node: the gate refuses it until the administrator allows it.
	cmd := exec.Command("kubectl", "apply", "--dry-run=server", "-f", testenv.Path("examples", "instances", "pinned-demo.yaml"))
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "instance-host-path-volume-allowed") {
		t.Errorf("a hostPath volume is refused while instance-host-path-volume-allowed is off: %v\n%s", err, out)
	}
	setHostPath("true")
	t.Cleanup(func() { setHostPath("false") })
	eventually(t, time.Minute, func() (bool, string) {
		cmd := exec.Command("kubectl", "apply", "-f", testenv.Path("examples", "instances", "pinned-demo.yaml"))
		cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig)
		out, err := cmd.CombinedOutput()
		return err == nil, "pinned-demo once hostPath volumes are allowed: " + string(out)
	})
	t.Cleanup(func() { kubectl(t, "delete", "instance", "pinned-demo", "-n", "default", "--ignore-not-found") })
	// The dataset volume does not exist yet: no Pod, and the status says why.
	waitPhase(t, "pinned-demo", "Starting: waiting for volume datasets: no InstancePersistentVolume")
	ctx := context.Background()
	ipv := &workerv1.InstancePersistentVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "datasets"},
		Spec: workerv1.InstancePersistentVolumeSpec{Capacity: resource.MustParse("10Gi"), AccessMode: workerv1.ReadWriteMany}}
	if err := k.Create(ctx, ipv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), ipv) })
	waitPhase(t, "pinned-demo", "Starting: waiting for volume datasets: its claim is Pending, not bound")
	// An administrator provides a volume the claim binds to.
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "e2e-datasets"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/e2e-datasets"}}}}
	if err := k.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), pv) })
	eventually(t, time.Minute, func() (bool, string) {
		got := kubectl(t, "get", "instancepersistentvolume", "datasets", "-n", "default", "-o", "jsonpath={.status.phase} {.status.volume}")
		return got == "Bound e2e-datasets", "the volume's status: " + got
	})
	eventually(t, time.Minute, func() (bool, string) {
		cmd := exec.Command("kubectl", "get", "pod", "pinned-demo", "-n", "default", "-o",
			"jsonpath={.spec.nodeSelector.kubernetes\\.io/hostname} {.spec.containers[0].volumeMounts[*].mountPath}")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig)
		out, _ := cmd.CombinedOutput()
		return string(out) == "node-t4-b /workspace /mnt/datasets /etc/model/config.json /mnt/host-cache",
			"pinned-demo's Pod: " + string(out)
	})

	gone := builders.MakeInstance("default", "pinned-gone", "gpustack--nvidia-tesla-t4-linux-amd64").Accelerators(1).NodeName("node-gone").Obj()
	err := k.Create(ctx, gone)
	if err == nil || !strings.Contains(err.Error(), `spec.nodeName: Not found: "node-gone"`) {
		t.Errorf("a pin to a missing node is refused at creation, naming the field: %v", err)
		_ = k.Delete(context.Background(), gone)
	}

	// node-cpu has no T4: Kueue admits the T4 pool's quota, the scheduler cannot place the pin.
	nowhere := builders.MakeInstance("default", "pinned-nowhere", "gpustack--nvidia-tesla-t4-linux-amd64").Accelerators(1).NodeName("node-cpu").Obj()
	if err := k.Create(context.Background(), nowhere); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), nowhere) })
	waitPhase(t, "pinned-nowhere", "Starting: unschedulable: 0/4 nodes are available")
}

// TestPodUnitsFold creates, as a server-side dry run, a raw Pod that asks the T4 pool for a slice of 8192 MiB:
// the worker's webhook folds it into 800,000 units (half of a 16 GiB card), overwriting what the client set,
// and defaults the compute budget to 100 %.
func TestPodUnitsFold(t *testing.T) {
	skipWithoutCluster(t)
	waitTable(t, step1Types, "get", "instancetype")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "fold", Labels: map[string]string{"kueue.x-k8s.io/queue-name": "gpustack-fnv64-6b371caa2da0b799"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/gpu.sliced": resource.MustParse("1"),
				"nvidia.com/gpu.sliced.memory-mib": resource.MustParse("8192"), "nvidia.com/gpu.sliced.units": resource.MustParse("1")},
		}}}},
	}
	if err := k.Create(context.Background(), pod, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	got := pod.Spec.Containers[0].Resources.Limits
	units, cores := got["nvidia.com/gpu.sliced.units"], got["nvidia.com/gpu.sliced.cores-percentage"]
	if units.Value() != 800_000 || cores.Value() != 100 {
		t.Errorf("the fold gives 800000 units and 100 %% of the cores, got %s and %s", units.String(), cores.String())
	}

	// Shares on two cards must land on a node with at least two T4s: node-t4-a's one card cannot serve them.
	shared := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shared", Labels: map[string]string{"kueue.x-k8s.io/queue-name": "gpustack-fnv64-6b371caa2da0b799"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/gpu.shared": resource.MustParse("2")}}}}},
	}
	if err := k.Create(context.Background(), shared, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	var got2 []string
	if a := shared.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, e := range term.MatchExpressions {
				got2 = append(got2, fmt.Sprintf("%s %s %v", e.Key, e.Operator, e.Values))
			}
		}
	}
	if diff := cmp.Diff([]string{"acceleratable.feature.gpustack.ai/nvidia-tesla-t4.count Gt [1]"}, got2); diff != "" {
		t.Errorf("two shares require a node with two cards of the group: -want, +got:\n%s", diff)
	}
}

// TestInstancePorts runs an Instance that asks for a port on the generic CPU pool: it gets a NodePort Service
// of its name, and the node port shows in its status.
func TestInstancePorts(t *testing.T) {
	skipWithoutCluster(t)
	inst := builders.MakeInstance("default", "ported", "gpustack--generic-linux-amd64").Port(8080, "http").Obj()
	if err := k.Create(context.Background(), inst); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), inst) })
	waitPhase(t, "ported", "Ready")
	eventually(t, time.Minute, func() (bool, string) {
		got := kubectl(t, "get", "instance", "ported", "-n", "default", "-o", "jsonpath={.status.ports[0].name} {.status.ports[0].nodePort}")
		svc := kubectl(t, "get", "service", "ported", "-n", "default", "-o", "jsonpath={.spec.type} {.spec.ports[0].nodePort}")
		return strings.HasPrefix(got, "http 3") && strings.HasSuffix(svc, strings.TrimPrefix(got, "http ")) && strings.HasPrefix(svc, "NodePort"),
			fmt.Sprintf("status %q, service %q", got, svc)
	})
}

// TestGitOpsClaimsValidate sends the claims the Argo CD example syncs to the API server as a server-side dry
// run: every webhook and policy accepts them as Argo CD would apply them.
func TestGitOpsClaimsValidate(t *testing.T) {
	skipWithoutCluster(t)
	waitTable(t, step1Types, "get", "instancetype")
	kubectl(t, "apply", "--server-side", "--dry-run=server", "-f", testenv.Path("examples", "gitops", "claims"))
}
