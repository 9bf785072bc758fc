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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
	"github.com/gpustack/gpustack-operator/test/framework/walkthrough"
)

var (
	cluster  *localcluster.Cluster
	binDir   string
	noServer string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

// run starts a local cluster with the walkthrough's nodes, Kueue and NFD, but no operator: the chart installs
// it, and the test then starts the simulated device agents.
func run(m *testing.M) int {
	ctrllog.SetLogger(logr.Discard())
	bin, skip, err := testenv.BinDir("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
		"kueue", "nfd-master", "gpustack-operator", "helm", "localcluster")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if skip != "" {
		noServer = skip
		return m.Run()
	}
	binDir = bin
	inv, err := simulated.Load(testenv.Path("examples", "clusters", "walkthrough.yaml"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "gpustack-helm-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster, err = localcluster.Start(ctx, localcluster.Config{BinDir: bin, Dir: dir, Inventory: inv, Progress: os.Stderr,
		Operator: filepath.Join(bin, "gpustack-operator"), NoWorker: true, KeepJobsRunning: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot start the local cluster:", err)
		return 1
	}
	defer func() { _ = cluster.Stop() }()
	return m.Run()
}

// previousChart is the chart of the version before this one, v0.1.0, packaged (helm package) from the last
// commit that carried it (7015c8a), as its users installed it.
var previousChart = filepath.Join("testdata", "gpustack-operator-0.1.0.tgz")

// TestUpgradeUninstall installs the previous chart (v0.1.0) as the seed does, into gpustack-system, which
// enforces the restricted Pod Security profile: the CRDs, roles and Deployment go in; KWOK makes the Deployment
// ready and a stand-in kubelet runs its worker, as the chart's service account with the chart's arguments,
// until the walkthrough's Step 1 pools appear and Step 3's slice runs. helm upgrade to this chart keeps every
// Instance (its Pod not restarted), InstanceType and ledger entry. helm uninstall without cleanupOnUninstall
// leaves them and the queues; installed again, with cleanupOnUninstall, and uninstalled, the post-delete hook
// leaves no object of the operator.
//
// The local cluster runs Kueue and nfd-master itself, so the chart's own are switched off (kueue.enabled,
// nfd.enabled), as on a cluster that has them. The stand-in kubelet runs the operator built here for either
// version's image: what the upgrade is checked for is the chart's, and the CRDs', not v0.1.0's binary.
func TestUpgradeUninstall(t *testing.T) {
	if cluster == nil {
		t.Skip(noServer)
	}
	ctx := context.Background()
	c, k := setUp(t, cluster, map[string]string{operatorImage: filepath.Join(binDir, "gpustack-operator")})

	env := []string{"KUBECONFIG=" + cluster.Kubeconfig}
	webhook, health := testenv.FreePort(t), testenv.FreePort(t)
	// One replica: the stand-in kubelet runs Pods as processes of this machine, which would share their ports.
	common := []string{"--namespace", namespace, "--wait", "--timeout", "3m",
		"--set", "worker.webhook.url=https://127.0.0.1:" + webhook, "--set", "worker.webhook.port=" + webhook,
		"--set", "worker.healthPort=" + health, "--set", "worker.replicas=1"}
	this := append([]string{"--set", "kueue.enabled=false", "--set", "nfd.enabled=false"}, common...)
	rolledOut := func() {
		t.Helper()
		if out, err := testenv.Kubectl(cluster.Kubeconfig, "-n", namespace, "rollout", "status", "deployment/gpustack-operator-worker", "--timeout=2m"); err != nil {
			t.Fatal(err, out)
		}
	}

	if out, err := helm(t, env, append([]string{"install", release, previousChart}, common...)...); err != nil {
		t.Fatalf("helm install of v0.1.0: %v\n%s", err, out)
	}
	rolledOut()
	// The simulated device agents stand in for the DaemonSets' Pods, as the account the chart made for them.
	if err := cluster.StartAgents(ctx); err != nil {
		t.Fatal(err)
	}
	step1(t, cluster.Kubeconfig)
	if out, err := testenv.Kubectl(cluster.Kubeconfig, "apply", "-f", testenv.Path("examples", "instances", "sliced-demo.yaml")); err != nil {
		t.Fatal(err, out)
	}
	instanceReady(t, cluster.Kubeconfig, "sliced-demo")
	before := snapshot(ctx, t, c)
	// Step 3's table: the A10G's pool holds the slice.
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

	leader := holder(t, cluster.Kubeconfig, "")
	if out, err := helm(t, env, append([]string{"upgrade", release, chart}, this...)...); err != nil {
		t.Fatalf("helm upgrade to this chart: %v\n%s", err, out)
	}
	rolledOut()
	if out, err := testenv.Kubectl(cluster.Kubeconfig, "-n", namespace, "get", "deployment/gpustack-operator-worker",
		"-o", "jsonpath={.spec.template.spec.containers[0].image}"); err != nil || !strings.HasSuffix(out, ":"+appVersion(t)) {
		t.Fatalf("the upgrade did not roll the worker to %s: %v %s", appVersion(t), err, out)
	}
	holder(t, cluster.Kubeconfig, leader) // the new worker leads: what follows is its work, not the old one's
	sameViews()
	instanceReady(t, cluster.Kubeconfig, "sliced-demo")
	if diff := cmp.Diff(before, snapshot(ctx, t, c)); diff != "" {
		t.Errorf("helm upgrade from v0.1.0 changed what it must keep: -before, +after:\n%s", diff)
	}

	// Without cleanupOnUninstall, the release's objects go and everything the operator made or keeps stays.
	if out, err := helm(t, env, "uninstall", release, "--namespace", namespace, "--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	if diff := cmp.Diff(before, snapshot(ctx, t, c)); diff != "" {
		t.Errorf("helm uninstall without cleanupOnUninstall lost state: -before, +after:\n%s", diff)
	}
	for _, kind := range []string{"clusterqueues.kueue.x-k8s.io", "localqueues.kueue.x-k8s.io", "resourceflavors.kueue.x-k8s.io"} {
		if out, err := testenv.Kubectl(cluster.Kubeconfig, "get", kind, "-A", "-o", "name"); err != nil || !strings.Contains(out, "gpustack") {
			t.Errorf("helm uninstall without cleanupOnUninstall removed the operator's %s: %v %s", kind, err, out)
		}
	}

	if out, err := helm(t, env, append([]string{"install", release, chart, "--set", "cleanupOnUninstall=true"}, this...)...); err != nil {
		t.Fatalf("helm install again: %v\n%s", err, out)
	}
	rolledOut()
	sameViews()
	instanceReady(t, cluster.Kubeconfig, "sliced-demo")
	if out, err := helm(t, env, "uninstall", release, "--namespace", namespace, "--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	logs, err := k.Finished("gpustack-operator-cleanup", 3*time.Minute)
	if err != nil {
		t.Fatalf("the cleanup hook failed: %v\n%s", err, logs)
	}
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		left := leftovers(ctx, t, c)
		return len(left) == 0, fmt.Sprintf("left behind after helm uninstall: %v\ncleanup said:\n%s", left, logs)
	})
}

// operatorImage is the operator's image repository.
const operatorImage = "docker.io/gpustack/gpustack-operator"

// setUp makes the release's namespace enforce the restricted Pod Security profile and runs a stand-in kubelet
// for the Pods of images in it and in NFD's namespace until the test ends (their logs shown if it failed); it
// returns a client of the cluster and the kubelet.
func setUp(t *testing.T, cl *localcluster.Cluster, images map[string]string) (client.Client, *localcluster.PodRunner) {
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
	kctx, stop := context.WithCancel(ctx)
	k, err := localcluster.NewPodRunner(cl.RESTConfig, t.TempDir(), images, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { k.Run(kctx, namespace, "node-feature-discovery"); close(stopped) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(k.Logs())
		}
		stop()
		<-stopped
	})
	return c, k
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
		return err == nil && out == "Ready", fmt.Sprintf("instance %s phase %q: %v", name, out, err)
	})
}

// snapshot is what an upgrade or an uninstall without cleanup must keep: each Instance (UID and phase) and its
// Pod (UID: not restarted), each InstanceType (UID), and each node's ledger (UID and its cards' entries).
func snapshot(ctx context.Context, t *testing.T, c client.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	instances := &workerv1.InstanceList{}
	types := &workerv1.InstanceTypeList{}
	ledgers := &workerv1.DevicesList{}
	pods := &corev1.PodList{}
	for _, l := range []client.ObjectList{instances, types, ledgers} {
		if err := c.List(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.List(ctx, pods, client.InNamespace("default")); err != nil {
		t.Fatal(err)
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
// the device agents created at run time.
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
				left = append(left, gvk.Kind+" "+client.ObjectKeyFromObject(u).String())
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
