package helm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/realnode"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
	"github.com/gpustack/gpustack-operator/test/framework/walkthrough"
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// upgradeFrom is where make tools puts what the upgrade starts the cluster's own Kueue on, in the binaries'
// directory: the chart and the image of the Kueue this chart bundled before its own.
const upgradeFrom = "upgrade-from"

// startCluster starts a local cluster of the walkthrough's nodes as real nodes (a kubelet and containerd each,
// holding the images built here and the previous Kueue's) with nothing installed on it, stopped when the test
// ends: the test installs Kueue, NFD and the operator with helm, as a user does. Only the test that needs it
// starts it, so the chart's rendering tests run on their own in seconds and never start nodes beside another
// suite's. It returns the binaries' directory as well.
func startCluster(t *testing.T) (*localcluster.Cluster, string) {
	t.Helper()
	previousImage := filepath.Join(upgradeFrom, "kueue.tar")
	bin, skip, err := testenv.BinDir("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
		"kubelet", "kube-proxy", "helm", "localcluster", previousImage, filepath.Join(upgradeFrom, "kueue", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	image, err := testenv.OperatorImage()
	if err != nil {
		t.Fatal(err)
	}
	inv, err := simulated.Load(testenv.Path("examples", "clusters", "walkthrough.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: the nodes' state outlives a failed test for a person to read, as the e2e suites' does.
	dir, err := os.MkdirTemp("", "gpustack-helm-")
	if err != nil {
		t.Fatal(err)
	}
	// A cold machine's nodes take minutes to import their images.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cluster, err := localcluster.Start(ctx, localcluster.Config{BinDir: bin, Dir: dir, Inventory: inv, Progress: os.Stderr,
		RealNodes: true, NodeCommand: filepath.Join(bin, "localcluster"),
		Images: []string{image, filepath.Join(bin, previousImage)}})
	if err != nil {
		t.Fatal("cannot start the local cluster: ", err)
	}
	t.Cleanup(func() {
		_ = cluster.Stop()
		if !t.Failed() {
			_ = os.RemoveAll(dir)
		}
	})
	return cluster, bin
}

// previousChart is the chart of the version before this one, v0.1.0, packaged (helm package) from the last
// commit that carried it (7015c8a), as its users installed it.
var previousChart = filepath.Join("testdata", "gpustack-operator-0.1.0.tgz")

// wholeT4 is an Instance of a whole T4, which needs no soft-slicing enforcer: v0.1.0 delivered none.
const wholeT4 = `apiVersion: worker.gpustack.ai/v1
kind: Instance
metadata: {name: whole-t4, namespace: default}
spec:
  type: gpustack--nvidia-tesla-t4-linux-amd64
  image: ubuntu:24.04
  command: [sleep, "86400"]
  resources: {accelerator: "1"}
  volume: {ephemeral: {capacity: 1Gi}}
`

// TestUpgradeUninstall follows an administrator through the chart's life on real nodes. The cluster runs Kueue
// and NFD of its own (installed as their own releases with the values this chart gives them: NFD's chart this
// chart bundles, and the Kueue this chart bundled before, v0.17.0), and the previous chart (v0.1.0) is
// installed as the seed does, into gpustack-system, which enforces the restricted Pod Security profile, until
// the walkthrough's Step 1 pools appear and a whole T4 runs. Kueue is upgraded to the one this chart bundles,
// as every user of the bundled Kueue does with this release: the Workloads it admitted stay admitted, and
// nothing of the operator's moves. v0.1.0's image is this build's (image.tag): what the upgrade is checked for
// is the chart's and the CRDs', not v0.1.0's binary. helm upgrade to this chart (kueue.enabled and nfd.enabled
// false: the cluster's own are used) keeps every Instance (its Pod not restarted), InstanceType and ledger entry, and Step 3's slice
// runs with the enforcers this chart delivers. helm uninstall without cleanupOnUninstall leaves them and the
// queues, and no webhook configuration; installed again with cleanupOnUninstall and uninstalled, the post-delete hook leaves no object of
// the operator, but a user's volume's claim stays. Last, the cluster's own Kueue and NFD make way for the chart's: installed with them, the
// pools come back, and helm uninstall with cleanupOnUninstall takes Kueue and NFD with the release but keeps
// Kueue's CRDs and another team's Workload; installed again over them, the pools come back.
func TestUpgradeUninstall(t *testing.T) {
	cluster, bin := startCluster(t)
	ctx := context.Background()
	c := setUp(t, cluster)
	env := []string{"KUBECONFIG=" + cluster.Kubeconfig}
	kubectl := func(args ...string) {
		t.Helper()
		if out, err := testenv.Kubectl(cluster.Kubeconfig, args...); err != nil {
			t.Fatal(err, out)
		}
	}
	install := func(what string, args ...string) {
		t.Helper()
		if out, err := helm(t, env, args...); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
	}
	rolledOut := func() {
		t.Helper()
		kubectl("-n", namespace, "rollout", "status", "deployment/gpustack-operator-worker", "--timeout=3m")
	}
	wait := []string{"--wait", "--timeout", "5m"}
	// Kueue asks no CPU: it runs on the walkthrough's own nodes, whose pools would lose its half core.
	kueueValues := func(file string) []string {
		return append([]string{"--namespace", "kueue-system", "-f", file, "--set", "controllerManager.manager.resources.requests.cpu=0"}, wait...)
	}
	previousKueue := filepath.Join(bin, upgradeFrom, "kueue")
	install("helm install of the previous Kueue", append([]string{"install", "kueue", previousKueue, "--create-namespace",
		"--set", "controllerManager.manager.image.tag=" + chartAppVersion(t, previousKueue)},
		kueueValues(withoutDRAMappings(t, subchartValues(t, "kueue")))...)...)
	install("helm install of NFD", append([]string{"install", "nfd", filepath.Join(chart, "charts", "node-feature-discovery"),
		"--namespace", "node-feature-discovery", "--create-namespace", "-f", subchartValues(t, "nfd")}, wait...)...)

	common := append([]string{"--namespace", namespace}, wait...)
	install("helm install of v0.1.0", append([]string{"install", release, previousChart, "--set", "image.tag=" + appVersion(t)}, common...)...)
	rolledOut()
	step1(t, cluster.Kubeconfig)
	kubectl("apply", "-f", writeFile(t, "whole-t4.yaml", wholeT4))
	instanceReady(t, cluster.Kubeconfig, "whole-t4")
	before := snapshot(ctx, t, c)
	views, err := testenv.Kubectl(cluster.Kubeconfig, "get", "instancetype")
	if err != nil {
		t.Fatal(err, views)
	}
	sameViews := func() {
		t.Helper()
		testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
			got, err := testenv.Kubectl(cluster.Kubeconfig, "get", "instancetype")
			if err != nil {
				return false, err.Error()
			}
			diff := cmp.Diff(walkthrough.ParseTable(views), walkthrough.ParseTable(got))
			return diff == "", "kubectl get instancetype: -before, +now:\n" + diff
		})
	}

	// Kueue's CRDs are templates of its chart: helm upgrades them with its controller.
	bundledKueue := filepath.Join(chart, "charts", "kueue")
	install("helm upgrade of Kueue to the one this chart bundles", append([]string{"upgrade", "kueue", bundledKueue}, kueueValues(subchartValues(t, "kueue"))...)...)
	want := "registry.k8s.io/kueue/kueue:" + chartAppVersion(t, bundledKueue)
	if out, err := testenv.Kubectl(cluster.Kubeconfig, "-n", "kueue-system", "get", "deployment", "kueue-controller-manager",
		"-o", `jsonpath={.spec.template.spec.containers[?(@.name=="manager")].image}`); err != nil || out != want {
		t.Fatalf("Kueue runs %q after the upgrade, want %s: %v", out, want, err)
	}
	sameViews()
	instanceReady(t, cluster.Kubeconfig, "whole-t4")
	if diff := cmp.Diff(before, snapshot(ctx, t, c)); diff != "" {
		t.Errorf("helm upgrade of Kueue changed what it must keep: -before, +after:\n%s", diff)
	}

	this := append([]string{"--set", "kueue.enabled=false", "--set", "nfd.enabled=false",
		"--set", "worker.deviceManager.enforcers.image=" + realnode.EnforcerImage}, common...)
	leader := holder(t, cluster.Kubeconfig, "")
	// As docs/install.md says: Helm never changes the CRDs of crds/ after the first install.
	kubectl("apply", "--server-side", "--force-conflicts", "-f", testenv.Path("package", "crds"))
	// v0.1.0's worker made the webhook configurations, which this chart renders: the upgrade adopts them.
	install("helm upgrade to this chart", append([]string{"upgrade", release, chart, "--take-ownership"}, this...)...)
	rolledOut()
	holder(t, cluster.Kubeconfig, leader) // the new worker leads: what follows is its work, not the old one's
	sameViews()
	instanceReady(t, cluster.Kubeconfig, "whole-t4")
	if diff := cmp.Diff(before, snapshot(ctx, t, c)); diff != "" {
		t.Errorf("helm upgrade from v0.1.0 changed what it must keep: -before, +after:\n%s", diff)
	}
	kubectl("apply", "-f", testenv.Path("examples", "instances", "sliced-demo.yaml"))
	instanceReady(t, cluster.Kubeconfig, "sliced-demo")
	// The nodes' CPU keys move to their brands once this chart's cpu-info reporter runs (v0.1.0 had none): a
	// slice admitted by the old keys before they moved is built again (PodRebuilt), not left Pending.
	if out, err := testenv.Kubectl(cluster.Kubeconfig, "get", "events", "-n", "default", "--field-selector",
		"involvedObject.name=sliced-demo,reason=PodRebuilt", "-o", "jsonpath={.items[*].message}"); err == nil && out != "" {
		t.Logf("sliced-demo was built again: %s", out)
	}
	views, err = testenv.Kubectl(cluster.Kubeconfig, "get", "instancetype")
	if err != nil {
		t.Fatal(err, views)
	}
	before = snapshot(ctx, t, c)

	// Without cleanupOnUninstall, the release's objects go and everything the operator made or keeps stays.
	install("helm uninstall", "uninstall", release, "--namespace", namespace, "--wait", "--timeout", "3m")
	if diff := cmp.Diff(before, snapshot(ctx, t, c)); diff != "" {
		t.Errorf("helm uninstall without cleanupOnUninstall lost state: -before, +after:\n%s", diff)
	}
	for _, kind := range []string{"clusterqueues.kueue.x-k8s.io", "localqueues.kueue.x-k8s.io", "resourceflavors.kueue.x-k8s.io"} {
		if out, err := testenv.Kubectl(cluster.Kubeconfig, "get", kind, "-A", "-o", "name"); err != nil || !strings.Contains(out, "gpustack") {
			t.Errorf("helm uninstall without cleanupOnUninstall removed the operator's %s: %v %s", kind, err, out)
		}
	}
	// The webhook configurations are the chart's: no fail-closed webhook outlives the worker that answered it.
	if out, err := testenv.Kubectl(cluster.Kubeconfig, "get", "mutatingwebhookconfigurations,validatingwebhookconfigurations", "-o", "name"); err != nil || strings.Contains(out, "gpustack") {
		t.Errorf("helm uninstall without cleanupOnUninstall left webhook configurations of the operator: %v %s", err, out)
	}

	install("helm install again", append([]string{"install", release, chart, "--set", "cleanupOnUninstall=true"}, this...)...)
	rolledOut()
	sameViews()
	instanceReady(t, cluster.Kubeconfig, "sliced-demo")
	instanceReady(t, cluster.Kubeconfig, "whole-t4")
	// A user's volume: the cleanup deletes the operator's CRDs, and the claim the volume owns must outlive them.
	kubectl("apply", "-f", writeFile(t, "users-volume.yaml", usersVolume))
	t.Cleanup(func() {
		_, _ = testenv.Kubectl(cluster.Kubeconfig, "delete", "pvc", "users-data", "-n", "default", "--ignore-not-found")
	})
	var claim string
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		out, err := testenv.Kubectl(cluster.Kubeconfig, "get", "pvc", "users-data", "-n", "default", "-o",
			"jsonpath={.metadata.uid} {.metadata.ownerReferences[*].kind}")
		claim, _, _ = strings.Cut(out, " ")
		return err == nil && strings.HasSuffix(out, " InstancePersistentVolume"), fmt.Sprintf("the volume's claim, owned by it: %v %s", err, out)
	})
	// helm fails the uninstall when the post-delete hook's Job fails.
	install("helm uninstall with cleanupOnUninstall", "uninstall", release, "--namespace", namespace, "--wait", "--timeout", "3m")
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		left := leftovers(ctx, t, c)
		return len(left) == 0, fmt.Sprintf("left behind after helm uninstall: %v", left)
	})
	// The CRDs are gone, and with them the volume: the garbage collector has had its turn at the claim, which
	// stays, freed of its owner (no reference to a kind that no longer exists, which would hold it for good).
	if out, err := testenv.Kubectl(cluster.Kubeconfig, "get", "pvc", "users-data", "-n", "default", "-o",
		"jsonpath={.metadata.uid} {.metadata.deletionTimestamp} {.metadata.ownerReferences[*].kind}"); err != nil || out != claim+"  " {
		t.Errorf("helm uninstall with cleanupOnUninstall took a user's claim, or left it owned (uid %s before; want \"uid  \"): %v %q", claim, err, out)
	}

	// The chart's own Kueue and NFD replace the cluster's.
	install("helm uninstall of Kueue", "uninstall", "kueue", "--namespace", "kueue-system", "--timeout", "3m")
	install("helm uninstall of NFD", "uninstall", "nfd", "--namespace", "node-feature-discovery", "--timeout", "3m")
	// Kueue's CRDs outlive the cluster's own Kueue's release (they are kept): this release takes them over.
	install("helm install with Kueue and NFD", append([]string{"install", release, chart, "--set", "cleanupOnUninstall=true",
		"--set", "kueue.controllerManager.manager.resources.requests.cpu=0", "--take-ownership"}, common...)...)
	rolledOut()
	step1(t, cluster.Kubeconfig)
	// Another team's Kueue work, none of the operator's: the uninstall must leave it, and Kueue's CRDs with it.
	kubectl("apply", "-f", writeFile(t, "team-b-work.yaml", otherTeamsWorkload))
	install("helm uninstall with Kueue and NFD", "uninstall", release, "--namespace", namespace, "--timeout", "3m")
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		left := leftovers(ctx, t, c)
		if out, _ := testenv.Kubectl(cluster.Kubeconfig, "get", "deployments,daemonsets", "-A", "-o", "name"); out != "" {
			left = append(left, "workloads: "+out)
		}
		return len(left) == 0, fmt.Sprintf("left behind after helm uninstall: %v", left)
	})
	if out, err := testenv.Kubectl(cluster.Kubeconfig, "get", "workload", "team-b-work", "-n", "default", "-o", "name"); err != nil {
		t.Errorf("helm uninstall took another team's Workload (or Kueue's CRDs): %v %s", err, out)
	}
	// Installed again over the CRDs it kept, the release adopts them and the pools come back.
	install("helm install again over Kueue's kept CRDs", append([]string{"install", release, chart,
		"--set", "kueue.controllerManager.manager.resources.requests.cpu=0"}, common...)...)
	rolledOut()
	step1(t, cluster.Kubeconfig)
}

// usersVolume is a user's InstancePersistentVolume, whose claim holds their data.
const usersVolume = `apiVersion: worker.gpustack.ai/v1
kind: InstancePersistentVolume
metadata: {name: users-data, namespace: default}
spec: {capacity: 1Gi}
`

// otherTeamsWorkload is a Workload of another team's queue, which no uninstall of the operator may take.
const otherTeamsWorkload = `apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: team-b-work
  namespace: default
spec:
  queueName: team-b-queue
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: main
          image: busybox
`

// setUp makes the release's namespace enforce the restricted Pod Security profile and returns a client of the
// cluster.
func setUp(t *testing.T, cl *localcluster.Cluster) client.Client {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(cl.RESTConfig, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	err = c.Get(ctx, client.ObjectKeyFromObject(ns), ns)
	if apierrors.IsNotFound(err) {
		err = c.Create(ctx, ns)
	}
	if err != nil {
		t.Fatalf("cannot get or create namespace %s: %v", namespace, err)
	}
	ns.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	if err := c.Update(ctx, ns); err != nil {
		t.Fatal(err)
	}
	return c
}

// subchartValues writes the values this chart gives its subchart (key kueue or nfd), less its switch, to a
// file: what a cluster that runs Kueue or NFD of its own configured them with.
func subchartValues(t *testing.T, key string) string {
	t.Helper()
	return editValues(t, filepath.Join(chart, "values.yaml"), key+"-values.yaml", func(values map[string]any) map[string]any {
		sub, ok := values[key].(map[string]any)
		if !ok {
			t.Fatalf("the chart's values have no %s", key)
		}
		delete(sub, "enabled")
		return sub
	})
}

// withoutDRAMappings writes the Kueue values of file less the configuration's resources.deviceClassMappings,
// which Kueue reads from v0.18 on: an older Kueue refuses a configuration with a field it does not know, so a
// cluster that ran one configured it without them.
func withoutDRAMappings(t *testing.T, file string) string {
	t.Helper()
	return editValues(t, file, "kueue-values-without-dra.yaml", func(values map[string]any) map[string]any {
		manager, _ := values["managerConfig"].(map[string]any)
		text, _ := manager["controllerManagerConfigYaml"].(string)
		var cfg map[string]any
		if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
			t.Fatal(err)
		}
		resources, ok := cfg["resources"].(map[string]any)
		if !ok {
			t.Fatalf("the Kueue configuration of %s has no resources", file)
		}
		delete(resources, "deviceClassMappings")
		out, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		manager["controllerManagerConfigYaml"] = string(out)
		return values
	})
}

// editValues reads the values file from, writes what edit makes of them into the test's file named to, and
// returns its path.
func editValues(t *testing.T, from, to string, edit func(map[string]any) map[string]any) string {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(edit(values))
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, to, string(out))
}

// writeFile writes a file of the test and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// step1 waits for kubectl get instancetype to read as the walkthrough's Step 1.
func step1(t *testing.T, kubeconfig string) {
	t.Helper()
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		got, err := testenv.Kubectl(kubeconfig, "get", "instancetype")
		if err != nil {
			return false, err.Error()
		}
		diff := cmp.Diff(walkthrough.Step1Types, walkthrough.ParseTable(got))
		return diff == "", "kubectl get instancetype: -want, +got:\n" + diff
	})
}

// holder waits until a worker holds its Lease, other than not (a process's identity is unique to it), and
// returns its identity.
func holder(t *testing.T, kubeconfig, not string) string {
	t.Helper()
	var got string
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		out, err := testenv.Kubectl(kubeconfig, "-n", namespace, "get", "lease", "gpustack-operator-worker",
			"-o", "jsonpath={.spec.holderIdentity}")
		got = out
		return err == nil && out != "" && out != not, fmt.Sprintf("the worker's Lease is held by %q (want another than %q): %v", out, not, err)
	})
	return got
}

// instanceReady waits for the Instance of namespace default to be Ready.
func instanceReady(t *testing.T, kubeconfig, name string) {
	t.Helper()
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		out, err := testenv.Kubectl(kubeconfig, "-n", "default", "get", "instance", name, "-o", "jsonpath={.status.phase}")
		if err == nil && out == "Ready" {
			return true, ""
		}
		// What keeps it: the Instance's conditions, and its Pod's phase, containers' states and where it may
		// go (against the nodes' labels, for an unschedulable Pod).
		why, _ := testenv.Kubectl(kubeconfig, "-n", "default", "get", "instance,pod", name, "-o",
			`jsonpath={range .items[*]}{.kind}: {.status.phase} {.status.conditions[*].message} {.status.containerStatuses[*].state} {.spec.nodeSelector} {.spec.affinity}{"\n"}{end}`)
		if strings.Contains(why, "didn't match Pod's node affinity/selector") {
			labels, _ := testenv.Kubectl(kubeconfig, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name}: {.metadata.labels}{"\n"}{end}`)
			why += "Nodes:\n" + labels
		}
		return false, fmt.Sprintf("instance %s phase %q: %v\n%s", name, out, err, why)
	})
}

// snapshot is what an upgrade or an uninstall without cleanup must keep: each Instance (UID and phase) and its
// Pod (UID: not restarted) and Workload (UID: not made again, and whether it is admitted), each InstanceType
// (UID), and each node's ledger (UID and its cards' entries).
func snapshot(ctx context.Context, t *testing.T, c client.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	instances := &workerv1.InstanceList{}
	types := &workerv1.InstanceTypeList{}
	ledgers := &workerv1.DevicesList{}
	pods := &corev1.PodList{}
	workloads := &kueue.WorkloadList{}
	for _, l := range []client.ObjectList{instances, types, ledgers} {
		if err := c.List(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []client.ObjectList{pods, workloads} {
		if err := c.List(ctx, l, client.InNamespace("default")); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range workloads.Items {
		out["Workload "+w.Namespace+"/"+w.Name] = fmt.Sprintf("%s admitted %t", w.UID, apimeta.IsStatusConditionTrue(w.Status.Conditions, kueue.WorkloadAdmitted))
	}
	for _, i := range instances.Items {
		out["Instance "+i.Namespace+"/"+i.Name] = string(i.UID) + " " + string(i.Status.Phase)
	}
	for _, p := range pods.Items {
		out["Pod "+p.Namespace+"/"+p.Name] = string(p.UID)
	}
	for _, it := range types.Items {
		out["InstanceType "+it.Name] = string(it.UID)
	}
	for _, d := range ledgers.Items {
		entries, err := json.Marshal(d.Status.Groups)
		if err != nil {
			t.Fatal(err)
		}
		out["Devices "+d.Name] = string(d.UID) + " " + string(entries)
	}
	return out
}

// leftovers lists every object of the operator still in the cluster: the release's, and what the worker and
// the device managers created at run time.
func leftovers(ctx context.Context, t *testing.T, c client.Client) []string {
	t.Helper()
	var left []string
	list := func(gvk schema.GroupVersionKind, keep func(u *unstructured.Unstructured) bool) {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk)
		if err := c.List(ctx, l); err != nil {
			if !apierrors.IsNotFound(err) && !strings.Contains(err.Error(), "no matches for kind") {
				left = append(left, fmt.Sprintf("cannot list %s: %v", gvk.Kind, err))
			}
			return
		}
		for i := range l.Items {
			if u := &l.Items[i]; keep(u) {
				what := gvk.Kind + " " + client.ObjectKeyFromObject(u).String()
				if u.GetDeletionTimestamp() != nil {
					what += fmt.Sprintf(" (deleting, finalizers %v)", u.GetFinalizers())
				}
				left = append(left, what)
			}
		}
	}
	named := func(u *unstructured.Unstructured) bool { return strings.HasPrefix(u.GetName(), "gpustack") }
	partOf := func(u *unstructured.Unstructured) bool {
		return strings.HasPrefix(u.GetLabels()["app.kubernetes.io/part-of"], "gpustack-operator")
	}
	composed := func(u *unstructured.Unstructured) bool { return u.GetAnnotations()["gpustack.ai/composed-hash"] != "" }
	list(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinitionList"},
		func(u *unstructured.Unstructured) bool { return strings.HasSuffix(u.GetName(), ".worker.gpustack.ai") })
	for _, kind := range []string{"ClusterRoleList", "ClusterRoleBindingList", "RoleList", "RoleBindingList"} {
		list(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: kind}, named)
	}
	for _, kind := range []string{"MutatingWebhookConfigurationList", "ValidatingWebhookConfigurationList",
		"ValidatingAdmissionPolicyList", "ValidatingAdmissionPolicyBindingList"} {
		list(schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: kind}, named)
	}
	for _, kind := range []string{"ServiceAccountList", "SecretList", "ServiceList", "ConfigMapList"} {
		list(schema.GroupVersionKind{Version: "v1", Kind: kind}, func(u *unstructured.Unstructured) bool {
			return u.GetNamespace() != "kube-system" && (named(u) && u.GetName() != "gpustack-settings" || partOf(u))
		})
	}
	list(schema.GroupVersionKind{Version: "v1", Kind: "NamespaceList"}, func(u *unstructured.Unstructured) bool {
		return u.GetName() == "gpustack-device-manager"
	})
	for _, kind := range []string{"DeploymentList", "DaemonSetList"} {
		list(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: kind}, partOf)
	}
	list(schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "JobList"}, partOf)
	for _, kind := range []string{"ResourceFlavorList", "ClusterQueueList", "LocalQueueList"} {
		list(schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: kind}, composed)
	}
	list(schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "AdmissionCheckList"}, named)
	list(schema.GroupVersionKind{Group: "nfd.k8s-sigs.io", Version: "v1alpha1", Kind: "NodeFeatureList"}, partOf)
	list(schema.GroupVersionKind{Group: "nfd.k8s-sigs.io", Version: "v1alpha1", Kind: "NodeFeatureRuleList"}, partOf)
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		left = append(left, err.Error())
	}
	for _, n := range nodes.Items {
		for _, mf := range n.ManagedFields {
			if mf.Manager == "gpustack-operator-node-capacity" {
				left = append(left, "Node "+n.Name+" status fields of gpustack-operator-node-capacity")
			}
		}
	}
	return left
}
