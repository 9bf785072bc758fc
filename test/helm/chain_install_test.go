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

// kueueImage is the repository of the Kueue image the chart's Kueue runs.
const kueueImage = "registry.k8s.io/kueue/kueue"

// TestChainInstall installs the chart on a local cluster that has no Kueue: helm install brings up Kueue from
// its own chart, run by the stand-in kubelet from the chart's Deployment with the Kueue built here, its
// configuration from the chart's ConfigMap and the webhook certificate it makes itself, which the API server
// reaches through the webhook Service's endpoint. The walkthrough's Step 1 tables appear, and Step 3's slice is
// admitted by that Kueue and runs. nfd-master is still the local cluster's (nfd.enabled=false): running it
// from the chart is left to the local cluster's own kubelet (issue 13).
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
		Operator: filepath.Join(binDir, "gpustack-operator"), NoWorker: true, NoKueue: true, NoKueueCRDs: true, KeepJobsRunning: true, PodNetwork: true})
	if err != nil {
		t.Fatal("cannot start the local cluster:", err)
	}
	defer func() { _ = bare.Stop() }()
	setUp(t, bare, map[string]string{operatorImage: filepath.Join(binDir, "gpustack-operator"), kueueImage: filepath.Join(binDir, "kueue")})

	env := []string{"KUBECONFIG=" + bare.Kubeconfig}
	webhook, health := testenv.FreePort(t), testenv.FreePort(t)
	if out, err := helm(t, env, "install", release, chart, "--namespace", namespace, "--wait", "--timeout", "3m",
		"--set", "nfd.enabled=false",
		// The Pods share this machine's network: the worker's ports are set apart from Kueue's (9443, 8081).
		"--set", "worker.webhook.url=https://127.0.0.1:"+webhook, "--set", "worker.webhook.port="+webhook,
		"--set", "worker.healthPort="+health, "--set", "worker.replicas=1",
		// Step 1's CPU view counts what the nodes' other Pods leave; the walkthrough's cluster runs its system
		// elsewhere, while here the chart's Pods land on its nodes: Kueue's half core would take one off.
		"--set", "kueue.controllerManager.manager.resources.requests.cpu=0"); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	for _, d := range []string{"kueue-controller-manager", "gpustack-operator-worker"} {
		if out, err := testenv.Kubectl(bare.Kubeconfig, "-n", namespace, "rollout", "status", "deployment/"+d, "--timeout=2m"); err != nil {
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
