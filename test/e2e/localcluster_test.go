// Package e2e runs end-to-end tests on the local cluster: a real control plane, KWOK nodes from the
// walkthrough inventory, nfd-master and Kueue.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
	"github.com/gpustack/gpustack-operator/test/walkthrough"
)

var (
	cluster *localcluster.Cluster
	k       client.Client
	inv     *simulated.Inventory
	skipped string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrllog.SetLogger(logr.Discard())
	bin, skip, err := testenv.BinDir("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
		"kueue", "nfd-master", "gpustack-operator")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if skip != "" {
		skipped = skip
		return m.Run()
	}
	if inv, err = simulated.Load(testenv.Path("examples", "clusters", "walkthrough.yaml")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "gpustack-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster, err = localcluster.Start(ctx, localcluster.Config{
		BinDir: bin, Dir: dir, Inventory: inv, CRDPaths: []string{testenv.Path("package", "crds")}, Progress: os.Stderr,
		Operator: filepath.Join(bin, "gpustack-operator"), PolicyPaths: []string{testenv.Path("policies", "cel")},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot start the local cluster:", err)
		return 1
	}
	if k, err = client.New(cluster.RESTConfig, client.Options{Scheme: scheme.New()}); err != nil {
		fmt.Fprintln(os.Stderr, "cannot create client:", err)
		_ = cluster.Stop()
		return 1
	}
	code := m.Run()
	if err := stopAndCheck(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}

// stopAndCheck stops the cluster and fails if any of its processes is left.
func stopAndCheck(dir string) error {
	pids, _ := filepath.Glob(filepath.Join(dir, "pids", "*.pid"))
	var recorded []string
	for _, p := range pids {
		b, _ := os.ReadFile(p)
		recorded = append(recorded, strings.TrimSpace(string(b)))
	}
	if err := cluster.Stop(); err != nil {
		return errors.Wrap(err, "cannot stop the local cluster")
	}
	for _, pid := range recorded {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err == nil && !strings.Contains(string(stat), ") Z") {
			return errors.Errorf("process %s of the local cluster still runs after Stop", pid)
		}
	}
	return nil
}

func skipWithoutCluster(t *testing.T) {
	t.Helper()
	if cluster == nil {
		t.Skip(skipped)
	}
}

// TestNodesReady checks one Ready node per inventory entry, with the entry's capacity.
func TestNodesReady(t *testing.T) {
	skipWithoutCluster(t)
	type capacity struct {
		Ready                     bool
		CPU, Memory, Storage, GPU string
	}
	want := map[string]capacity{}
	for _, n := range inv.Nodes {
		var cards int64
		for _, a := range n.Accelerators {
			cards += int64(a.Count)
		}
		want[n.Name] = capacity{Ready: true, CPU: fmt.Sprint(n.CPU.Cores), Memory: n.Memory.String(),
			Storage: n.Storage.String(), GPU: resource.NewQuantity(cards, resource.DecimalSI).String()}
	}
	nodes := &corev1.NodeList{}
	if err := k.List(context.Background(), nodes); err != nil {
		t.Fatal(err)
	}
	got := map[string]capacity{}
	for _, n := range nodes.Items {
		gpu := n.Status.Capacity[corev1.ResourceName("nvidia.com/gpu")]
		got[n.Name] = capacity{
			Ready: localcluster.NodeReady(&n), CPU: n.Status.Capacity.Cpu().String(), Memory: n.Status.Capacity.Memory().String(),
			Storage: n.Status.Capacity.StorageEphemeral().String(), GPU: gpu.String(),
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("one Ready node per walkthrough entry with its capacity: -want, +got:\n%s", diff)
	}
}

// TestKindsServed checks that every kind of the API is served with its scope and short name.
func TestKindsServed(t *testing.T) {
	skipWithoutCluster(t)
	cs, err := cluster.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.Discovery().ServerResourcesForGroupVersion(workerv1.GroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	type kind struct {
		Namespaced bool
		ShortNames string
	}
	got := map[string]kind{}
	for _, r := range list.APIResources {
		if !strings.Contains(r.Name, "/") {
			got[r.Kind] = kind{r.Namespaced, strings.Join(r.ShortNames, ",")}
		}
	}
	want := map[string]kind{
		"InstanceType": {false, "instype"}, "InstanceTypeFlavor": {false, "instypeflavor"},
		"Instance": {true, "inst"}, "InstancePersistentVolume": {true, "instpv"},
		"Devices": {false, "devs"}, "Setting": {true, "set"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("worker.gpustack.ai/v1 kinds: -want, +got:\n%s", diff)
	}
}

// TestKueueAdmitsCredits runs the real Kueue: a Pod asking for one NVIDIA card is charged 1,600,000
// credits.gpustack.ai/nvidia, admitted against a queue of exactly that quota and run by KWOK; a second one
// waits for quota.
func TestKueueAdmitsCredits(t *testing.T) {
	skipWithoutCluster(t)
	ctx := context.Background()
	rf := &kueuev1beta2.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "e2e-credits"}}
	cq := &kueuev1beta2.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "e2e-credits"},
		Spec: kueuev1beta2.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{},
			ResourceGroups: []kueuev1beta2.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{"credits.gpustack.ai/nvidia"},
				Flavors: []kueuev1beta2.FlavorQuotas{{Name: "e2e-credits", Resources: []kueuev1beta2.ResourceQuota{{
					Name: "credits.gpustack.ai/nvidia", NominalQuota: resource.MustParse("1600k")}}}},
			}},
		}}
	lq := &kueuev1beta2.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "e2e-credits"},
		Spec: kueuev1beta2.LocalQueueSpec{ClusterQueue: "e2e-credits"}}
	for _, o := range []client.Object{rf, cq, lq} {
		if err := k.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name,
				Labels: map[string]string{"kueue.x-k8s.io/queue-name": "e2e-credits"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
		}
	}
	first, second := pod("e2e-first"), pod("e2e-second")
	t.Cleanup(func() {
		for _, o := range []client.Object{first, second, lq, cq, rf} {
			_ = k.Delete(context.Background(), o)
		}
	})
	if err := k.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := k.Get(ctx, client.ObjectKeyFromObject(first), first)
		return err == nil && first.Status.Phase == corev1.PodRunning, nil
	}); err != nil {
		t.Fatalf("the first Pod did not run: phase %q, gates %v", first.Status.Phase, first.Spec.SchedulingGates)
	}
	if err := k.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	// The second Pod must stay gated: its 1,600,000 credits exceed what is left of the quota.
	time.Sleep(3 * time.Second)
	if err := k.Get(ctx, client.ObjectKeyFromObject(second), second); err != nil {
		t.Fatal(err)
	}
	if len(second.Spec.SchedulingGates) == 0 || second.Status.Phase == corev1.PodRunning {
		t.Errorf("the second Pod got through a full queue: phase %q, gates %v", second.Status.Phase, second.Spec.SchedulingGates)
	}
}

// TestNFDPropagatesLabels checks that nfd-master turns a NodeFeature's labels into Node labels.
func TestNFDPropagatesLabels(t *testing.T) {
	skipWithoutCluster(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workerv1.SystemNamespace}}
	if err := k.Create(ctx, ns); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	nf := &nfdv1alpha1.NodeFeature{
		ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: "node-cpu-e2e",
			Labels: map[string]string{"nfd.node.kubernetes.io/node-name": "node-cpu"}},
		Spec: nfdv1alpha1.NodeFeatureSpec{Labels: map[string]string{"e2e.feature.gpustack.ai/probe": "true"}},
	}
	if err := k.Create(ctx, nf); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), nf) })
	node := &corev1.Node{}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := k.Get(ctx, client.ObjectKey{Name: "node-cpu"}, node)
		return err == nil && node.Labels["e2e.feature.gpustack.ai/probe"] == "true", nil
	}); err != nil {
		t.Errorf("the NodeFeature label did not reach node-cpu: %v", node.Labels)
	}
}

// kubectlTable runs kubectl against the cluster and splits its table into cells.
func kubectlTable(t *testing.T, args ...string) [][]string {
	t.Helper()
	return walkthrough.ParseTable(kubectl(t, args...))
}

// kubectl runs kubectl against the cluster and fails the test when it fails.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := testenv.Kubectl(cluster.Kubeconfig, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// eventually polls cond until it holds, failing the test with cond's last message after timeout.
func eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	testenv.Eventually(t, timeout, cond)
}

// waitTable waits until kubectl prints the table.
func waitTable(t *testing.T, want [][]string, args ...string) {
	t.Helper()
	// Generous: on a loaded 2-core machine a recompute can queue behind the other components.
	eventually(t, 2*time.Minute, func() (bool, string) {
		diff := cmp.Diff(want, kubectlTable(t, args...))
		return diff == "", fmt.Sprintf("kubectl %s: -want, +got:\n%s", strings.Join(args, " "), diff)
	})
}

// column returns a one-column table.
func column(header string, rows ...string) [][]string {
	out := [][]string{{header}}
	for _, r := range rows {
		out = append(out, []string{r})
	}
	return out
}

// TestDeviceAgentsDeployed checks that the worker, with only its generated role, deployed the device agents:
// the NVIDIA DaemonSet runs on the three NVIDIA nodes (KWOK runs the Pods) and the AMD one on none.
func TestDeviceAgentsDeployed(t *testing.T) {
	skipWithoutCluster(t)
	status := func(mfr string) string {
		return kubectl(t, "get", "daemonset", "-n", "gpustack-device-manager", "gpustack-operator-device-manager-"+mfr,
			"-o", "jsonpath={.status.desiredNumberScheduled}/{.status.numberReady}")
	}
	eventually(t, 2*time.Minute, func() (bool, string) {
		got := status("nvidia")
		return got == "3/3", "NVIDIA agents desired/ready: " + got
	})
	if got := status("amd"); got != "0/0" {
		t.Errorf("AMD agents desired/ready = %s, want 0/0 on a cluster without AMD cards", got)
	}
	if got := kubectl(t, "get", "namespace", "gpustack-device-manager", "-o", "jsonpath={.metadata.labels.pod-security\\.kubernetes\\.io/enforce}"); got != "privileged" {
		t.Errorf("the agents' namespace enforces %q, want privileged", got)
	}
}
