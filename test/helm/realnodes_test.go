package helm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/deviceagent"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// TestChartOnRealNodes installs the chart with helm, and its defaults, on the walkthrough's four nodes run as
// real nodes (a kubelet v1.35.4 with containerd each), which hold the chart's images as make package and make
// tools build them and pull nothing: the worker's two replicas, Kueue, nfd-master and an nfd-worker on every
// node run in real containers, and a worker leads. The pools read as Step 1 from what NFD, the kubelets and
// the agents found; Step 3's slice and Step 6's pinned Instance run in real containers (with the test values of
// real nodes: storage on as the default class, the stand-in enforcers copied by the agents).
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
	for _, ns := range []string{localcluster.ChartNamespace, "node-feature-discovery", "gpustack-storage"} {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Status.ContainerStatuses[0].ContainerID != "" {
				running[p.Labels["app.kubernetes.io/name"]+" "+p.Labels["app.kubernetes.io/component"]+p.Labels["role"]]++
			}
		}
	}
	want := map[string]int{"gpustack-operator worker": 2, "kueue ": 1, "nfd master": 1, "nfd gc": 1, "nfd worker": len(inv.Nodes),
		"gpustack-local-path-provisioner ": 1}
	if diff := cmp.Diff(want, running); diff != "" {
		t.Errorf("the chart's Pods running in containers, by name and component\n-want, +got:\n%s", diff)
	}

	// nfd-worker read each node's PCI bus: the cards' vendor is the label the NVIDIA agent DaemonSet selects.
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, n := range nodes.Items {
			got := n.Labels["feature.node.kubernetes.io/pci-10de.present"] == "true"
			if wantLabel := n.Name != "node-cpu"; got != wantLabel {
				return false, fmt.Sprintf("node %s: NFD's pci-10de.present label is %v, want %v", n.Name, got, wantLabel)
			}
		}
		for _, n := range nodes.Items {
			if problem := cpuIdentity(n, inventoryNode(inv, n.Name)); problem != "" {
				return false, problem
			}
		}
		ds, err := cs.AppsV1().DaemonSets(deviceagent.Namespace).Get(ctx, deviceagent.DaemonSetName("nvidia"), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if ds.Status.DesiredNumberScheduled != 3 || ds.Status.NumberReady != 3 {
			return false, fmt.Sprintf("the NVIDIA agents are scheduled on %d nodes and ready on %d, want the three with cards",
				ds.Status.DesiredNumberScheduled, ds.Status.NumberReady)
		}
		return true, ""
	})

	// Each agent read its node's cards through NVML (the stand-in library of the node's simulated driver) and
	// published them: the node's Devices object holds the inventory's cards.
	// The pools read as the walkthrough's Step 1, from what NFD, the kubelets and the agents found.
	step1(t, c.Kubeconfig)

	kc, err := client.New(c.RESTConfig, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		for _, n := range inv.Nodes {
			want, _ := simulated.New(n).Detect(ctx)
			d := &workerv1.Devices{}
			err := kc.Get(ctx, client.ObjectKey{Name: n.Name}, d)
			if len(want) == 0 {
				if err == nil || !apierrors.IsNotFound(err) {
					return false, fmt.Sprintf("node %s has no card, yet a Devices object (%v)", n.Name, err)
				}
				continue
			}
			if err != nil {
				return false, fmt.Sprintf("node %s's Devices: %v", n.Name, err)
			}
			if diff := cmp.Diff(providers.DevicesSpec(want), d.Spec); diff != "" {
				return false, fmt.Sprintf("node %s's Devices, as its agent detected them: -inventory, +published:\n%s", n.Name, diff)
			}
		}
		return true, ""
	})

	// Instances run in real containers: Step 3's slice, reached with kubectl exec and ssh, and Step 6's pin.
	a10g, _ := simulated.New(inventoryNode(inv, "node-a10g")).Detect(ctx)
	slicedInstance(ctx, t, c.Kubeconfig, cs, kc, a10g[0])
	pinnedInstance(ctx, t, c.Kubeconfig, cs, kc)
}

// cpuIdentity says what of a node's CPU identity differs from its inventory entry, as the cpu-info reporter
// read it from the node's /proc/cpuinfo and NFD wrote it: the brand string annotation, the vendor label, the
// capacity the kubelet counted, the gKey the worker's profile derives from them, and acceleratable=false on
// the node without cards.
func cpuIdentity(n corev1.Node, want simulated.Node) string {
	gKey := pools.GeneralPrefix + pools.GeneralKey(want.CPU.Vendor, want.CPU.Model, want.CPU.Family, want.CPU.ID)
	got := map[string]string{
		"annotation " + pools.AnnotationCPUName: n.Annotations[pools.AnnotationCPUName],
		"label " + pools.LabelCPUVendor:         n.Labels[pools.LabelCPUVendor],
		"capacity cpu":                          n.Status.Capacity.Cpu().String(),
		"label " + gKey:                         n.Labels[gKey],
	}
	wantFields := map[string]string{
		"annotation " + pools.AnnotationCPUName: want.CPU.Model,
		"label " + pools.LabelCPUVendor:         want.CPU.Vendor,
		"capacity cpu":                          fmt.Sprint(want.CPU.Cores),
		"label " + gKey:                         "true",
	}
	if len(want.Accelerators) == 0 {
		got["label "+pools.LabelAcceleratable] = n.Labels[pools.LabelAcceleratable]
		wantFields["label "+pools.LabelAcceleratable] = "false"
	}
	if diff := cmp.Diff(wantFields, got); diff != "" {
		return fmt.Sprintf("node %s's CPU identity: -want, +got:\n%s", n.Name, diff)
	}
	return ""
}

func inventoryNode(inv *simulated.Inventory, name string) simulated.Node {
	for _, n := range inv.Nodes {
		if n.Name == name {
			return n
		}
	}
	return simulated.Node{}
}
