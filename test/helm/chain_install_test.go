package helm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// The images of the chart's Kueue and nfd-master, as the stand-in kubelet knows them.
const kueueImage, nfdMaster = "registry.k8s.io/kueue/kueue", "registry.k8s.io/nfd/node-feature-discovery nfd-master"

// TestChainInstall installs the chart on a local cluster that has neither Kueue nor nfd-master: helm install
// alone brings them up from their own charts, run by the stand-in kubelet from the charts' Deployments with the
// binaries built here. Kueue reads its configuration from the chart's ConfigMap and makes its own webhook
// certificate, which the API server reaches through the webhook Service's endpoint; nfd-master turns the
// device agents' NodeFeatures into the labels the pools are made of. The walkthrough's Step 1 tables appear,
// and Step 3's slice is admitted by that Kueue and runs. nfd-worker's Pods are KWOK's: the nodes' CPU identity
// it would read is the simulated hardware's, which the local cluster puts on the Nodes.
func TestChainInstall(t *testing.T) {
	if cluster == nil {
		t.Skip(noServer)
	}
	inv, err := simulated.Load(testenv.Path("examples", "clusters", "walkthrough.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bare, err := localcluster.Start(ctx, localcluster.Config{BinDir: binDir, Dir: t.TempDir(), Inventory: inv, Progress: os.Stderr,
		Operator: filepath.Join(binDir, "gpustack-operator"), NoWorker: true, NoKueue: true, NoKueueCRDs: true, NoNFD: true, KeepJobsRunning: true, PodNetwork: true})
	if err != nil {
		t.Fatal("cannot start the local cluster:", err)
	}
	defer func() { _ = bare.Stop() }()
	setUp(t, bare, map[string]string{operatorImage: filepath.Join(binDir, "gpustack-operator"), kueueImage: filepath.Join(binDir, "kueue"),
		nfdMaster: filepath.Join(binDir, "nfd-master")})

	env := []string{"KUBECONFIG=" + bare.Kubeconfig}
	webhook, health, nfd := testenv.FreePort(t), testenv.FreePort(t), testenv.FreePort(t)
	if out, err := helm(t, env, "install", release, chart, "--namespace", namespace, "--wait", "--timeout", "3m",
		// The Pods share this machine's network: the worker's ports are set apart from Kueue's (9443, 8081)
		// and nfd-master's from the worker's metrics (8080).
		"--set", "nfd.master.port="+nfd,
		"--set", "worker.webhook.url=https://127.0.0.1:"+webhook, "--set", "worker.webhook.port="+webhook,
		"--set", "worker.healthPort="+health, "--set", "worker.replicas=1",
		// Step 1's CPU view counts what the nodes' other Pods leave; the walkthrough's cluster runs its system
		// elsewhere, while here the chart's Pods land on its nodes: Kueue's half core would take one off.
		"--set", "kueue.controllerManager.manager.resources.requests.cpu=0"); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	for _, d := range []string{namespace + "/kueue-controller-manager", namespace + "/gpustack-operator-worker", "node-feature-discovery/gpustack-operator-nfd-master"} {
		ns, name, _ := strings.Cut(d, "/")
		if out, err := testenv.Kubectl(bare.Kubeconfig, "-n", ns, "rollout", "status", "deployment/"+name, "--timeout=2m"); err != nil {
			t.Fatal(err, out)
		}
	}
	if err := bare.StartAgents(ctx); err != nil {
		t.Fatal(err)
	}
	step1(t, bare.Kubeconfig)
	if out, err := testenv.Kubectl(bare.Kubeconfig, "apply", "-f", testenv.Path("examples", "instances", "sliced-demo.yaml")); err != nil {
		t.Fatal(err, out)
	}
	instanceReady(t, bare.Kubeconfig, "sliced-demo")
	out, err := testenv.Kubectl(bare.Kubeconfig, "-n", "default", "get", "workloads", "-o",
		`jsonpath={range .items[*]}{.status.admission.clusterQueue}{" "}{.status.conditions[?(@.type=="Admitted")].status}{"\n"}{end}`)
	if err != nil || !strings.Contains(out, "gpustack-") || !strings.Contains(out, " True") {
		t.Errorf("the slice's Workload is not admitted by the chart's Kueue: %v\n%s", err, out)
	}
}
