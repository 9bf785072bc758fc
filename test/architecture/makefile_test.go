package architecture_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// TestDemoBuildsOnlyWhatItUses dry-runs `make demo` on an empty bin/: a newcomer's first demo builds the
// control plane, KWOK, Kueue, nfd-master and the real nodes' kubelet and images, and none of the tools only the
// tests use.
func TestDemoBuildsOnlyWhatItUses(t *testing.T) {
	cmd := exec.Command("make", "-n", "demo", "BIN="+t.TempDir())
	cmd.Dir = testenv.Path()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n demo: %v\n%s", err, out)
	}
	var builds []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "go build") {
			builds = append(builds, l)
		}
	}
	plan := strings.Join(builds, "\n")
	for _, want := range []string{"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager",
		"k8s.io/kubernetes/cmd/kube-scheduler", "k8s.io/kubernetes/cmd/kubelet", "k8s.io/kubernetes/cmd/kube-proxy", "go.etcd.io/etcd/server/v3",
		"sigs.k8s.io/kueue/cmd/kueue", "cmd/nfd-master", "helm.sh/helm/v3/cmd/helm", "./cmd/gpustack-operator", "./hack/localcluster"} {
		if !strings.Contains(plan, want) {
			t.Errorf("make -n demo does not build %s; its builds:\n%s", want, plan)
		}
	}
	// KWOK's simulated nodes are the scale harness's; the demo's nodes are real.
	for _, unwanted := range []string{"sigs.k8s.io/kwok/cmd/kwok", "gatekeeper", "cmd/crank", "crossplane/v2/cmd/crossplane", "open-policy-agent/opa",
		"controller-tools", "golangci-lint"} {
		if strings.Contains(plan, unwanted) {
			t.Errorf("make -n demo builds %s, which the demo never uses; its builds:\n%s", unwanted, plan)
		}
	}
	// Nor does it read a module it never builds: on a cold machine that module is not in the cache.
	if strings.Contains(string(out), "github.com/crossplane/crossplane/v2") {
		t.Errorf("make -n demo reads the Crossplane module, which a cold machine has not downloaded:\n%s", out)
	}
}
