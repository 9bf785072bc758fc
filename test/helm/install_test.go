package helm

import (
	"context"
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
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpustack/gpustack-operator/apis/scheme"
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
		"kueue", "nfd-master", "gpustack-operator", "helm")
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

// TestInstallUninstall installs the chart as the seed does, into gpustack-system, which enforces the restricted
// Pod Security profile. The chart's CRDs, roles and Deployment go in; KWOK makes the Deployment ready and a
// stand-in kubelet runs its worker, as the chart's service account with the chart's arguments, until the
// walkthrough's Step 1 pools appear. Uninstalling with cleanupOnUninstall runs the post-delete hook the same
// way; afterwards no object of the operator is left.
func TestInstallUninstall(t *testing.T) {
	if cluster == nil {
		t.Skip(noServer)
	}
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(cluster.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cluster.RESTConfig, client.Options{Scheme: scheme.New()})
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
	k := &kubelet{cs: cs, cfg: cluster.RESTConfig, binary: filepath.Join(binDir, "gpustack-operator"),
		image: "docker.io/gpustack/gpustack-operator:v0.1.0", dir: t.TempDir()}
	stopped := make(chan struct{})
	go func() { k.run(kctx, t, namespace); close(stopped) }()
	defer func() { stop(); <-stopped }()
	defer func() {
		if t.Failed() {
			t.Log(k.logs())
		}
	}()

	env := []string{"KUBECONFIG=" + cluster.Kubeconfig}
	webhook, health := testenv.FreePort(t), testenv.FreePort(t)
	out, err := helm(t, env, "install", release, chart, "--namespace", namespace, "--wait", "--timeout", "3m",
		"--set", "worker.webhook.url=https://127.0.0.1:"+webhook, "--set", "worker.webhook.port="+webhook,
		// One replica: the stand-in kubelet runs Pods as processes of this machine, which would share their ports.
		"--set", "worker.healthPort="+health, "--set", "cleanupOnUninstall=true", "--set", "worker.replicas=1")
	if err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	if out, err := testenv.Kubectl(cluster.Kubeconfig, "-n", namespace, "rollout", "status", "deployment/gpustack-operator-worker", "--timeout=2m"); err != nil {
		t.Fatal(err, out)
	}
	// The simulated device agents stand in for the DaemonSets' Pods, as the account the chart made for them.
	if err := cluster.StartAgents(ctx); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		got, err := testenv.Kubectl(cluster.Kubeconfig, "get", "instancetype")
		if err != nil {
			return false, err.Error()
		}
		diff := cmp.Diff(walkthrough.Step1Types, walkthrough.ParseTable(got))
		return diff == "", "kubectl get instancetype: -want, +got:\n" + diff
	})

	if out, err := helm(t, env, "uninstall", release, "--namespace", namespace, "--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	logs, err := k.finished("gpustack-operator-cleanup", 3*time.Minute)
	if err != nil {
		t.Fatalf("the cleanup hook failed: %v\n%s", err, logs)
	}
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		left := leftovers(ctx, t, c)
		return len(left) == 0, fmt.Sprintf("left behind after helm uninstall: %v\ncleanup said:\n%s", left, logs)
	})
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
