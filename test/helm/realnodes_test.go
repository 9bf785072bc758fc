package helm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// TestChartOnRealNodes installs the chart with helm, and its defaults, on the walkthrough's four nodes run as
// real nodes (a kubelet v1.35.4 with containerd each), which hold the chart's images as make package and make
// tools build them and pull nothing: the worker's two replicas, Kueue, nfd-master and an nfd-worker on every
// node run in real containers, and a worker leads.
func TestChartOnRealNodes(t *testing.T) {
	if cluster == nil {
		t.Skip(noServer)
	}
	operatorImage := filepath.Join(os.Getenv("PACKAGE_DIR"), "images", "gpustack-operator.tar")
	if _, err := os.Stat(operatorImage); err != nil {
		t.Fatalf("the operator's image archive: %v (make package writes it; PACKAGE_DIR names where)", err)
	}
	inv, err := simulated.Load(testenv.Path("examples", "clusters", "walkthrough.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c, err := localcluster.Start(ctx, localcluster.Config{BinDir: binDir, Dir: dir, Inventory: inv, Progress: os.Stderr,
		Chart: chart, PodRunner: filepath.Join(binDir, "localcluster"), RealNodes: true, Images: []string{operatorImage}})
	if err != nil {
		t.Fatal("cannot start the real nodes and install the chart:", err, "\n", logs(dir))
	}
	defer func() { _ = c.Stop() }()
	cs, err := c.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != len(inv.Nodes) {
		t.Errorf("%d nodes, want the walkthrough's %d", len(nodes.Items), len(inv.Nodes))
	}
	for _, n := range nodes.Items {
		if info := n.Status.NodeInfo; info.KubeletVersion != "v1.35.4" || !strings.HasPrefix(info.ContainerRuntimeVersion, "containerd://") {
			t.Errorf("node %s runs kubelet %q on %q, want v1.35.4 on containerd", n.Name, info.KubeletVersion, info.ContainerRuntimeVersion)
		}
	}
	running := map[string]int{}
	for _, ns := range []string{localcluster.ChartNamespace, "node-feature-discovery"} {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Status.ContainerStatuses[0].ContainerID != "" {
				running[p.Labels["app.kubernetes.io/name"]+"/"+p.Labels["app.kubernetes.io/component"]+p.Labels["role"]]++
			}
		}
	}
	t.Logf("running: %v", running)
	if running["gpustack-operator/worker"] != 2 {
		t.Errorf("the chart's two worker replicas run in containers: %v", running)
	}
	if running["kueue/controller"] < 1 || running["node-feature-discovery/master"] < 1 || running["node-feature-discovery/worker"] != len(inv.Nodes) {
		t.Errorf("Kueue, nfd-master and an nfd-worker per node run in containers: %v", running)
	}
}
