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
// pools are made of. nfd-worker's Pods are KWOK's: the nodes' CPU identity it would read is the simulated
// hardware's, which the local cluster puts on the Nodes. The walkthrough's Steps 1 to 6 then follow, with its
// own commands and manifests (Step 5: the settings Secret patched, the worker's Deployment restarted), and
// helm uninstall with cleanupOnUninstall leaves nothing of the operator, Kueue or NFD.
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
	kubeconfig := bare.Kubeconfig
	run := func(args ...string) {
		t.Helper()
		if out, err := testenv.Kubectl(kubeconfig, args...); err != nil {
			t.Fatal(err, out)
		}
	}
	// views waits until kubectl get instancetypes shows each named pool's accelerator and CPU views.
	views := func(want map[string][2]string) {
		t.Helper()
		testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
			got, err := testenv.Kubectl(kubeconfig, "get", "instancetypes")
			if err != nil {
				return false, err.Error()
			}
			rows := map[string][2]string{}
			for _, row := range walkthrough.ParseTable(got) {
				rows[row[0]] = [2]string{row[3], row[4]}
			}
			for name, v := range want {
				if rows[name] != v {
					return false, fmt.Sprintf("%s: want %v; kubectl get instancetypes:\n%s", name, v, got)
				}
			}
			return true, ""
		})
	}
	phase := func(name, want string) {
		t.Helper()
		testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
			got, err := testenv.Kubectl(kubeconfig, "-n", "default", "get", "instance", name, "-o", "jsonpath={.status.phase}")
			return err == nil && got == want, fmt.Sprintf("instance %s: phase %q, want %s (%v)", name, got, want, err)
		})
	}
	const a10g, generic = "gpustack--nvidia-a10g-linux-amd64", "gpustack--generic-linux-amd64"
	free, none := "1/1 1/10 100/100 0/0", "0/0 0/0 0/0 0/0"

	// Step 1.
	step1(t, kubeconfig)

	// Step 2: the A10G node taken out of management and back, through its NodeFeature, which the chart's
	// nfd-master turns into Node labels.
	run("-n", "gpustack-system", "patch", "nodefeature", "node-a10g-gpustack-worker", "--type=merge", "-p", `{"spec":{"labels":{"gpustack.ai/managed":"false"}}}`)
	views(map[string][2]string{a10g: {none, "0/0"}, generic: {none, "48/68"}})
	run("-n", "gpustack-system", "patch", "nodefeature", "node-a10g-gpustack-worker", "--type=merge", "-p", `{"spec":{"labels":{"gpustack.ai/managed":"true"}}}`)
	step1(t, kubeconfig)

	// Step 3: the slice, admitted by the chart's Kueue.
	run("apply", "-f", testenv.Path("examples", "instances", "sliced-demo.yaml"))
	phase("sliced-demo", "Ready")
	views(map[string][2]string{a10g: {"0/0 0/0 80/80 0/0", "0/0"}})
	out, err := testenv.Kubectl(kubeconfig, "-n", "default", "get", "workloads", "-o",
		`jsonpath={range .items[*]}{.status.admission.clusterQueue}{" "}{.status.conditions[?(@.type=="Admitted")].status}{"\n"}{end}`)
	if err != nil || !strings.Contains(out, "gpustack-") || !strings.Contains(out, " True") {
		t.Errorf("the slice's Workload is not admitted by the chart's Kueue: %v\n%s", err, out)
	}
	run("delete", "-f", testenv.Path("examples", "instances", "sliced-demo.yaml"))
	views(map[string][2]string{a10g: {free, "0/0"}})

	// Step 4: an administrator's pool beside the derived one, a whole card on it, then the pool deleted: the
	// Instance is drained to Stopped.
	run("apply", "-f", testenv.Path("examples", "instancetypes", "a10g-12c128g.yaml"))
	views(map[string][2]string{"a10g-12c128g": {free, "0/0"}, a10g: {free, "0/0"}})
	run("apply", "-f", testenv.Path("examples", "instances", "custom-demo.yaml"))
	phase("custom-demo", "Ready")
	views(map[string][2]string{"a10g-12c128g": {none, "0/0"}, a10g: {none, "0/0"}})
	run("delete", "instancetype", "a10g-12c128g")
	phase("custom-demo", "Stopped")
	views(map[string][2]string{a10g: {free, "0/0"}})

	// Step 5, word for word: the settings patched, the worker's Deployment restarted; the new worker reads
	// them and the CPU-aware pools appear; custom-demo is re-pointed at the aware A10G pool and runs.
	leader := holder(t, kubeconfig, "")
	run("-n", "gpustack-system", "patch", "secret", "gpustack-settings", "--type=merge",
		"-p", `{"data":{"instance-type-aware-cpu-manufacturer":"`+base64.StdEncoding.EncodeToString([]byte("true"))+`"}}`)
	run("-n", "gpustack-system", "rollout", "restart", "deploy/gpustack-operator-worker")
	holder(t, kubeconfig, leader)
	const awareA10G = "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64"
	views(map[string][2]string{"gpustack--amd-epyc-7r13-linux-amd64": {none, "16/16"}, "gpustack--amd-epyc-7r32-linux-amd64": {none, "4/4"},
		"gpustack--intel-xeon-platinum-8259cl-linux-amd64": {none, "48/52"}, generic: {none, "48/72"}, awareA10G: {free, "0/0"}})
	run("-n", "default", "patch", "instance", "custom-demo", "--type=merge", "-p", `{"spec":{"type":"`+awareA10G+`","stop":false}}`)
	phase("custom-demo", "Ready")
	views(map[string][2]string{awareA10G: {none, "0/0"}, a10g: {none, "0/0"}})

	// Step 6: a T4 pinned to node-t4-b with a dataset claim, a ConfigMap key and a directory of the node, once
	// the setting allows hostPath volumes; an administrator provides the dataset's volume.
	manifests := filepath.Join(t.TempDir(), "step6.yaml")
	if err := os.WriteFile(manifests, []byte(step6Prerequisites), 0o644); err != nil {
		t.Fatal(err)
	}
	run("-n", "gpustack-system", "patch", "setting", "instance-host-path-volume-allowed", "--type", "merge", "-p", `{"spec":{"value":"true"}}`)
	run("apply", "-f", manifests)
	run("apply", "-f", testenv.Path("examples", "instances", "pinned-demo.yaml"))
	phase("pinned-demo", "Ready")
	if out, err := testenv.Kubectl(kubeconfig, "-n", "default", "get", "instance", "pinned-demo", "-o", "jsonpath={.status.nodeName}"); err != nil || out != "node-t4-b" {
		t.Errorf("pinned-demo runs on node-t4-b, got %q (%v)", out, err)
	}

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

// step6Prerequisites are what Step 6's Instance names: its dataset (an InstancePersistentVolume, and a volume
// an administrator provides for its claim) and its ConfigMap.
const step6Prerequisites = `apiVersion: worker.gpustack.ai/v1
kind: InstancePersistentVolume
metadata: {name: datasets, namespace: default}
spec: {capacity: 10Gi, accessMode: RWX}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: datasets}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteMany]
  hostPath: {path: /tmp/datasets}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: model-config, namespace: default}
data: {config.json: "{}"}
`

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
