package realnode_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin"
	"github.com/gpustack/gpustack-operator/providers/hardware"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/providers/smitool"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/realnode"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

const busybox = realnode.BusyboxImage

// TestRealNodes starts a control plane with two real nodes and checks what a kubelet of the machine would do:
// both register Ready with the kubelet and runtime built here; a Pod runs in a real container (its own
// cgroup below the kubelet's kubepods, its address from its node's Pod range), sees its node's simulated cards
// and none of this machine's devices through a hostPath of /sys, answers kubectl logs and exec through the kubelet, reaches the API server through the kubernetes Service (kube-proxy) and a Pod of the
// other node; and stopping the cluster leaves no process, cgroup or network namespace behind.
func TestRealNodes(t *testing.T) {
	bin, skip, err := testenv.BinDir("kubelet", "kube-proxy", "images/pause.tar", "images/busybox.tar")
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	command := filepath.Join(t.TempDir(), "localcluster")
	build := exec.Command("go", "build", "-o", command, "./hack/localcluster")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("cannot build the localcluster command: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	inv := &simulated.Inventory{Nodes: []simulated.Node{
		{Name: "node-a", OS: "linux", Arch: "amd64", Labels: map[string]string{"example.com/rack": "a"},
			CPU:          simulated.CPU{Vendor: "Intel", Model: "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz", Family: "6", ID: "85", Cores: 48},
			Memory:       resource.MustParse("192Gi"),
			Accelerators: []simulated.Accelerators{{Vendor: "nvidia", Product: "Tesla T4", Count: 2}}},
		{Name: "node-b", OS: "linux", Arch: "amd64", Accelerators: []simulated.Accelerators{
			{Vendor: "ascend", Product: "Ascend 910B3", Count: 2, Memory: resource.MustParse("64Gi"), DriverVersion: "24.1.rc2"},
			{Vendor: "cambricon", Product: "MLU370-X8", Count: 1, Memory: resource.MustParse("48Gi"), DriverVersion: "5.10.22"}}},
	}}
	c, err := localcluster.Start(ctx, localcluster.Config{BinDir: bin, Dir: dir, Inventory: inv,
		RealNodes: true, NodeCommand: command, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = c.Stop()
		}
	}()
	cs, err := c.Clientset()
	if err != nil {
		t.Fatal(err)
	}

	for i, n := range inv.Nodes {
		node, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		info := node.Status.NodeInfo
		if info.KubeletVersion != "v1.36.3" || !strings.HasPrefix(info.ContainerRuntimeVersion, "containerd://") {
			t.Errorf("node %s runs kubelet %q on %q, want v1.36.3 on containerd", n.Name, info.KubeletVersion, info.ContainerRuntimeVersion)
		}
		if got := nodeAddress(node); got != realnode.NodeIP(i+1) {
			t.Errorf("node %s has address %q, want %s", n.Name, got, realnode.NodeIP(i+1))
		}
	}
	nodeA := mustGetNode(ctx, t, c, "node-a")
	if got := nodeA.Labels["example.com/rack"]; got != "a" {
		t.Errorf("node-a's administrator label example.com/rack is %q, want a (the kubelet's --node-labels)", got)
	}
	// The kubelet's cAdvisor reads the node's processors and memory from its hardware fixture.
	if cpu, mem := nodeA.Status.Capacity.Cpu().String(), nodeA.Status.Capacity.Memory().String(); cpu != "48" || mem != "192Gi" {
		t.Errorf("node-a's capacity is %s CPUs and %s of memory, want its inventory's 48 and 192Gi", cpu, mem)
	}

	// The server on node-b is busybox's httpd on port 8080; the client on node-a calls it and the API server.
	server := pod("server", "node-b", "mkdir -p /www && echo served-by-node-b > /www/index.html && httpd -f -p 8080 -h /www")
	client := pod("client", "node-a", "echo client-started; cat /proc/self/cgroup; sleep 3600")
	client.Spec.Volumes = []corev1.Volume{
		{Name: "sys", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/sys"}}},
		{Name: "cpuinfo", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/proc/cpuinfo"}}},
	}
	client.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "sys", MountPath: "/host-sys", ReadOnly: true},
		{Name: "cpuinfo", MountPath: "/host-cpuinfo", ReadOnly: true}}
	for _, p := range []*corev1.Pod{server, client} {
		if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var serverIP string
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		for _, name := range []string{"server", "client"} {
			p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if p.Status.Phase != corev1.PodRunning {
				return false, name + " is " + string(p.Status.Phase) + ": " + podWaiting(p)
			}
			if name == "server" {
				serverIP = p.Status.PodIP
			}
		}
		return true, ""
	})
	if !strings.HasPrefix(serverIP, "198.19.2.") {
		t.Errorf("the server on node-b has address %s, want one of node-b's Pod range %s", serverIP, realnode.PodCIDR(2))
	}

	logs, err := testenv.Kubectl(c.Kubeconfig, "logs", "client")
	if err != nil {
		t.Fatalf("kubectl logs: %v\n%s", err, logs)
	}
	if !strings.Contains(logs, "client-started") || !strings.Contains(logs, "kubepods") {
		t.Errorf("the client's log should say it started in a cgroup below kubepods; it is:\n%s", logs)
	}
	inPod := func(what string, args ...string) string {
		out, err := testenv.Kubectl(c.Kubeconfig, append([]string{"exec", "client", "--"}, args...)...)
		if err != nil {
			t.Errorf("%s: kubectl exec: %v\n%s", what, err, out)
		}
		return out
	}
	if out := inPod("the container's user", "id", "-u"); strings.TrimSpace(out) != "0" {
		t.Errorf("kubectl exec client -- id -u: %q, want 0", out)
	}
	if out := inPod("the node's PCI bus", "sh", "-c", "cat /host-sys/bus/pci/devices/*/vendor"); strings.Fields(out) == nil ||
		strings.Join(strings.Fields(out), ",") != "0x10de,0x10de" {
		t.Errorf("node-a's PCI bus through a hostPath of /sys shows vendors %q, want its two NVIDIA cards and nothing else", out)
	}
	if out := inPod("the node's processors", "sh", "-c", "grep -c '^model name.*8259CL' /host-cpuinfo"); strings.TrimSpace(out) != "48" {
		t.Errorf("node-a's /proc/cpuinfo through a hostPath lists %q processors of its model, want 48", out)
	}
	// busybox's nc, not its wget: a static glibc resolves nothing, not even an address, without its NSS modules.
	if out := inPod("a Pod of the other node", "sh", "-c", "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 "+serverIP+" 8080"); !strings.Contains(out, "served-by-node-b") {
		t.Errorf("the client on node-a did not reach the server on node-b: %q", out)
	}
	// The kubernetes Service's address exists only in kube-proxy's rules; an open connection proves them.
	if out := inPod("the API server through its Service", "sh", "-c",
		"nc -w 5 $KUBERNETES_SERVICE_HOST $KUBERNETES_SERVICE_PORT </dev/null && echo connected"); !strings.Contains(out, "connected") {
		t.Errorf("the client did not reach the API server at its Service %s: %q", realnode.APIServiceIP, out)
	}

	// The agent's backends read node-b's cards from its bus and from the vendors' tools installed in its root,
	// run there chrooted, as the agent's container runs them in the node's root it mounts.
	root, err := c.NodeRoot("node-b")
	if err != nil {
		t.Fatal(err)
	}
	detected, err := hardware.New(hardware.Options{SysfsRoot: filepath.Join(root, pcisysfs.DefaultRoot),
		Runner: smitool.ExecRunner{Root: root, Scratch: devicemanager.ToolScratch(deviceplugin.DefaultDataDir)}}).Detect(ctx)
	if err != nil {
		t.Errorf("detecting node-b's cards: %v", err)
	}
	var got []string
	for _, d := range detected {
		got = append(got, fmt.Sprintf("%s %d %s %dMiB driver %s healthy %v", d.Manufacturer, d.Index, d.Product, d.MemoryMiB, d.DriverVersion, !d.Unhealthy))
	}
	want := []string{"ascend 0 Ascend 910B3 65536MiB driver 24.1.rc2 healthy true", "ascend 1 Ascend 910B3 65536MiB driver 24.1.rc2 healthy true",
		"cambricon 0 MLU370-X8 49152MiB driver 5.10.22 healthy true"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("node-b's cards as the agent's backends read its bus and its tools: -want, +got:\n%s", diff)
	}

	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatalf("stopping the cluster: %v", err)
	}
	for _, n := range inv.Nodes {
		if _, err := os.Stat("/run/netns/" + realnode.Namespace(n.Name)); err == nil {
			t.Errorf("the network namespace of %s outlived the cluster", n.Name)
		}
	}
	if out, _ := exec.Command("pgrep", "-f", dir).CombinedOutput(); len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("processes of the cluster outlived it: %s", out)
	}
}

func pod(name, node, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "main", Image: busybox, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", script}}},
		},
	}
}

func podWaiting(p *corev1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Waiting != nil {
			return s.State.Waiting.Reason + " " + s.State.Waiting.Message
		}
	}
	return ""
}

func nodeAddress(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

func mustGetNode(ctx context.Context, t *testing.T, c *localcluster.Cluster, name string) *corev1.Node {
	t.Helper()
	cs, err := c.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
