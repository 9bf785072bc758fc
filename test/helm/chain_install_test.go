package helm

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
	"github.com/gpustack/gpustack-operator/test/framework/walkthrough"
)

// TestChainInstall installs the chart on a local cluster that has neither Kueue nor nfd-master nor the
// operator, as make demo does (localcluster.Config.Chart): helm install alone brings them up from their own
// charts, their Pods run by the local cluster's PodRunner with the binaries built here. Kueue reads its
// configuration from the chart's ConfigMap and makes its own webhook certificate, which the API server reaches
// through the webhook Service's endpoint; nfd-master turns the device agents' NodeFeatures into the labels the
// pools are made of. The walkthrough's Step 1 tables appear, Step 3's slice is admitted by that Kueue and
// runs, and Step 5's own commands (the settings Secret patched, the worker's Deployment restarted) bring the
// CPU-aware pools. helm uninstall with cleanupOnUninstall then leaves nothing of the operator, Kueue or NFD. nfd-worker's Pods are KWOK's: the nodes' CPU identity it would read is the simulated hardware's, which
// the local cluster puts on the Nodes.
func TestChainInstall(t *testing.T) {
	if cluster == nil {
		t.Skip(noServer)
	}
	inv, err := simulated.Load(testenv.Path("examples", "clusters", "walkthrough.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bare, err := localcluster.Start(ctx, localcluster.Config{BinDir: binDir, Dir: dir, Inventory: inv, Progress: os.Stderr,
		Operator: filepath.Join(binDir, "gpustack-operator"), Chart: chart, PodRunner: filepath.Join(binDir, "localcluster"),
		ChartValues: []string{"cleanupOnUninstall=true"}, KeepJobsRunning: true})
	if err != nil {
		t.Fatal("cannot start the local cluster and install the chart:", err, "\n", logs(dir))
	}
	defer func() { _ = bare.Stop() }()
	defer func() {
		if t.Failed() {
			t.Log(logs(dir))
		}
	}()
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

	// Step 5, word for word: the settings patched, the worker's Deployment restarted; the new worker reads
	// them and the CPU-aware pools appear.
	leader := holder(t, bare.Kubeconfig, "")
	for _, args := range [][]string{
		{"-n", "gpustack-system", "patch", "secret", "gpustack-settings", "--type=merge",
			"-p", `{"data":{"instance-type-aware-cpu-manufacturer":"` + base64.StdEncoding.EncodeToString([]byte("true")) + `"}}`},
		{"-n", "gpustack-system", "rollout", "restart", "deploy/gpustack-operator-worker"},
	} {
		if out, err := testenv.Kubectl(bare.Kubeconfig, args...); err != nil {
			t.Fatal(err, out)
		}
	}
	holder(t, bare.Kubeconfig, leader)
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		got, err := testenv.Kubectl(bare.Kubeconfig, "get", "instancetype")
		if err != nil {
			return false, err.Error()
		}
		cpu := map[string]string{}
		for _, row := range walkthrough.ParseTable(got) {
			cpu[row[0]] = row[4]
		}
		want := map[string]string{"gpustack--amd-epyc-7r13-linux-amd64": "16/16", "gpustack--amd-epyc-7r32-linux-amd64": "4/4",
			"gpustack--intel-xeon-platinum-8259cl-linux-amd64": "48/52", "gpustack--generic-linux-amd64": "48/72"}
		for name, view := range want {
			if cpu[name] != view {
				return false, "Step 5's CPU-aware pools (CPU view) do not show:\n" + got
			}
		}
		return true, ""
	})

	// helm uninstall with cleanupOnUninstall takes Kueue and NFD with the release (Kueue's CRDs, among its
	// chart's templates, and every queue with them), and the hook removes what the worker made.
	env := []string{"KUBECONFIG=" + bare.Kubeconfig}
	// Without --wait, as by default: helm waiting for Kueue's CRDs would wait on its own post-delete hook, which
	// removes the finalizers that Kueue, gone with the release, no longer removes.
	if out, err := helm(t, env, "uninstall", release, "--namespace", namespace, "--timeout", "3m"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	c, err := client.New(bare.RESTConfig, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		left := leftovers(ctx, t, c)
		out, _ := testenv.Kubectl(bare.Kubeconfig, "get", "crd", "-o", "name")
		if strings.Contains(out, "kueue.x-k8s.io") {
			left = append(left, "Kueue's CRDs")
		}
		if out, _ := testenv.Kubectl(bare.Kubeconfig, "get", "deployments", "-A", "-o", "name"); out != "" {
			left = append(left, "Deployments: "+out)
		}
		return len(left) == 0, fmt.Sprintf("left behind after helm uninstall: %v", left)
	})
}

// logs returns the end of the local cluster's PodRunner log and of each Pod's.
func logs(dir string) string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(dir, "logs", "pods.log"))
	pods, _ := filepath.Glob(filepath.Join(dir, "pods", "*", "log"))
	for _, f := range append(files, pods...) {
		data, _ := os.ReadFile(f)
		fmt.Fprintf(&b, "=== %s\n%s\n", f, testenv.LastLines(string(data), 30))
	}
	return b.String()
}
