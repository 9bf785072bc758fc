package localcluster

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpustack/gpustack-operator/providers/nvidia"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/providers/smitool"
	"github.com/gpustack/gpustack-operator/test/framework/realnode"
	"github.com/gpustack/gpustack-operator/test/framework/smifixture"
	"github.com/gpustack/gpustack-operator/vendors"
)

// nodeComponent is the component name of a real node's supervisor.
func nodeComponent(name string) string { return "node-" + name }

// realNodeFlags are the API server's flags that differ when its nodes are real: it listens where the nodes'
// network reaches it (HostIP) and is the endpoint of the kubernetes Service there, Services get addresses
// kube-proxy programs on the nodes, and webhooks and aggregated APIs are called at their Pods' addresses.
func (c *Cluster) realNodeFlags() []string {
	if !c.cfg.RealNodes {
		return []string{"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
			"--service-cluster-ip-range=10.0.0.0/24",
			// On loopback the endpoint reconciler would refuse 127.0.0.1 as the kubernetes Service's endpoint.
			"--endpoint-reconciler-type=none"}
	}
	return []string{"--bind-address=0.0.0.0", "--advertise-address=" + realnode.HostIP,
		"--service-cluster-ip-range=" + realnode.ServiceCIDR, "--enable-aggregator-routing=true",
		// Kubelets are called at their address on the nodes' network, never by a name looked up outside.
		"--kubelet-preferred-address-types=InternalIP"}
}

// checkRealNodes fails early, saying what to run, when this machine cannot run real nodes.
func checkRealNodes(cfg Config) error {
	if !cfg.RealNodes {
		return nil
	}
	if os.Geteuid() != 0 {
		return errors.New("real nodes need root (network namespaces, mounts and cgroups)")
	}
	for _, b := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "nsenter", "unshare"} {
		if _, err := exec.LookPath(b); err != nil {
			return errors.Errorf("%s is missing: run `make host-packages` first", b)
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		return errors.New("the CNI plugins are missing: run `make host-packages` first")
	}
	for _, b := range []string{"kubelet", "kube-proxy", "images/pause.tar", "libnvidia-ml.so.1", "smi-standin"} {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, b)); err != nil {
			return errors.Errorf("%s is missing from %s: run `make tools` first", b, cfg.BinDir)
		}
	}
	if cfg.NodeCommand == "" {
		return errors.New("real nodes need the localcluster command (Config.NodeCommand), whose run-node runs them")
	}
	return nil
}

// nodeCredentials writes, for every real node, the kubelet's client certificate and kubeconfig (user
// system:node:<name>, which the Node authorizer limits to its own node) and kube-proxy's, all pointing at the
// API server's address on the nodes' network.
func (c *Cluster) nodeCredentials(p *pki) error {
	if !c.cfg.RealNodes || c.cfg.Inventory == nil {
		return nil
	}
	server := "https://" + realnode.HostIP + ":" + strconv.Itoa(c.ports.apiServer)
	if err := p.client("kube-proxy", "system:kube-proxy"); err != nil {
		return err
	}
	if err := p.kubeconfig(c.path("pki", "kube-proxy.kubeconfig"), "kube-proxy", server); err != nil {
		return err
	}
	for _, n := range c.cfg.Inventory.Nodes {
		name := "kubelet-" + n.Name
		if err := p.client(name, "system:node:"+n.Name, "system:nodes"); err != nil {
			return err
		}
		if err := p.kubeconfig(c.path("pki", name+".kubeconfig"), name, server); err != nil {
			return err
		}
	}
	return nil
}

// startRealNodes starts one real node per inventory entry and waits until every one is Ready.
func (c *Cluster) startRealNodes(ctx context.Context) error {
	if err := realnode.SetUpHost(ctx); err != nil {
		return err
	}
	images, err := filepath.Glob(filepath.Join(c.cfg.BinDir, "images", "*.tar"))
	if err != nil {
		return errors.Wrap(err, "cannot list the node images")
	}
	images = append(images, c.cfg.Images...)
	nodes := c.cfg.Inventory.Nodes
	first := max(c.cfg.FirstNodeIndex, 1)
	if err := realnode.RaiseInotifyLimit(first + len(nodes) - 1); err != nil {
		return err
	}
	for i, n := range nodes {
		labels := n.Labels
		if c.cfg.KWOKNodes != nil {
			labels = maps.Clone(n.Labels)
			if labels == nil {
				labels = map[string]string{}
			}
			labels[labelRealNode] = "real"
		}
		cfg := realnode.Config{
			Name: n.Name, Index: first + i, Dir: c.path("nodes", n.Name),
			Kubelet: c.bin("kubelet"), KubeProxy: c.bin("kube-proxy"),
			Kubeconfig:      c.path("pki", "kubelet-"+n.Name+".kubeconfig"),
			ProxyKubeconfig: c.path("pki", "kube-proxy.kubeconfig"),
			ClientCA:        c.path("pki", "ca.crt"),
			Images:          images, Labels: labels, PCIDevices: pciDevices(n),
			CPU:       realnode.CPU{Vendor: n.CPU.Vendor, Name: n.CPU.Model, Family: n.CPU.Family, Model: n.CPU.ID, Cores: int(n.CPU.Cores)},
			MemoryKiB: n.Memory.Value() >> 10, DiskBytes: n.Storage.Value(),
		}
		if fixture := nvmlFixture(n); fixture != "" {
			cfg.NVIDIADriver = &realnode.NVIDIADriver{Library: c.bin("libnvidia-ml.so.1"), Fixture: fixture}
		}
		if cfg.VendorTools, err = vendorTools(n, c.bin("smi-standin")); err != nil {
			return err
		}
		if err := realnode.ClearLeftovers(n.Name); err != nil {
			return err
		}
		if err := realnode.AddNode(ctx, n.Name, cfg.Index, first, first+len(nodes)-1); err != nil {
			return err
		}
		path, err := realnode.WriteConfig(cfg)
		if err != nil {
			return err
		}
		if err := c.start(nodeComponent(n.Name), nil, c.cfg.NodeCommand, "run-node", path); err != nil {
			return err
		}
	}
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	// A node imports its images and registers within seconds; a cold machine's first overlay mounts are slower.
	return c.waitFor(ctx, "real nodes", 3*time.Minute, func(ctx context.Context) error {
		for _, n := range nodes {
			node, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !NodeReady(node) {
				return errors.Errorf("node %s is not Ready", n.Name)
			}
		}
		return nil
	})
}

// stopRealNodes stops every real node started in dir, with what each node runs, and removes its network.
func stopRealNodes(dir string) error {
	configs, _ := filepath.Glob(filepath.Join(dir, "nodes", "*", "node.json"))
	var last error
	for _, path := range configs {
		cfg, err := realnode.ReadConfig(path)
		if err != nil {
			last = err
			continue
		}
		if err := realnode.StopNode(context.Background(), cfg); err != nil {
			last = err
		}
	}
	return last
}

// pciDevices are a node's cards as its PCI bus would show them (its vendor's ID, a 3D controller's class for
// a GPU and a processing accelerator's for the others), then its RDMA NICs, with their RDMA devices, then their
// virtual functions (simulated.Provider.RDMA's order), each linking its NIC.
func pciDevices(n simulated.Node) []realnode.PCIDevice {
	var out []realnode.PCIDevice
	for _, a := range n.Accelerators {
		v, ok := vendors.Lookup(a.Vendor)
		if !ok {
			continue
		}
		class := "120000"
		if v.Class == "GPU" {
			class = "030200"
		}
		for range a.Count {
			out = append(out, realnode.PCIDevice{Class: class, Vendor: v.PCIVendorID, Device: "0001"})
		}
	}
	firstNIC := len(out)
	// parents are the NICs of the virtual functions, in order: each NIC's index in n.RDMA, once per function.
	var parents []int
	for i, nic := range n.RDMA {
		for range nic.VirtualFunctions {
			parents = append(parents, i)
		}
	}
	for _, d := range simulated.New(n).RDMA() {
		// Mellanox ConnectX-6: an InfiniBand controller, or an Ethernet controller for RoCE; its virtual
		// functions are ConnectX-6 Virtual Functions.
		class, state, device, physfn := "020700", "4: ACTIVE", "101b", ""
		if d.LinkLayer == "Ethernet" {
			class = "020000"
		}
		if !d.Active {
			state = "1: DOWN"
		}
		if d.Virtual {
			device, physfn, parents = "101c", realnode.PCIAddress(firstNIC+parents[0]), parents[1:]
		}
		out = append(out, realnode.PCIDevice{Class: class, Vendor: "15b3", Device: device, PhysFn: physfn,
			RDMA: &realnode.RDMAPort{Device: d.Name, Verbs: d.Verbs[0], LinkLayer: d.LinkLayer, State: state}})
	}
	return out
}

// vendorTools are the node's stand-in management tools for its cards of the vendors read through one, which
// answer what smifixture renders for those cards at the addresses the node's PCI bus shows them (pciDevices'
// order); nil for a node without such cards. Each tool numbers its own vendor's cards from 0.
func vendorTools(n simulated.Node, standIn string) (*realnode.VendorTools, error) {
	devices, _ := simulated.New(n).Detect(context.Background())
	byVendor := map[string][]smitool.Card{}
	for i, d := range devices {
		d.Index = int32(len(byVendor[d.Manufacturer]))
		byVendor[d.Manufacturer] = append(byVendor[d.Manufacturer], smitool.Card{Device: d, BusID: realnode.PCIAddress(i)})
	}
	answers := smifixture.Answers{}
	tools := &realnode.VendorTools{StandIn: standIn}
	for vendor, cards := range byVendor {
		tool, ok := smifixture.Tools[vendor]
		if !ok {
			continue
		}
		rendered, err := tool.Render(cards)
		if err != nil {
			return nil, errors.Wrapf(err, "cannot render %s of node %s", tool.Name, n.Name)
		}
		maps.Copy(answers, rendered)
		tools.Names = append(tools.Names, tool.Name)
	}
	if len(tools.Names) == 0 {
		return nil, nil
	}
	sort.Strings(tools.Names)
	data, err := smifixture.StandInJSON(answers)
	if err != nil {
		return nil, err
	}
	tools.Answers = string(data)
	return tools, nil
}

// nvmlFixture is the stand-in NVML library's fixture for a node's NVIDIA cards, as its simulated backend
// detects them, with the MIG profiles of those in MIG mode; "" for a node without any.
func nvmlFixture(n simulated.Node) string {
	cards, _ := simulated.New(n).Detect(context.Background())
	var b strings.Builder
	for _, d := range cards {
		if d.Manufacturer != "nvidia" {
			continue
		}
		if b.Len() == 0 {
			major, minor, _ := strings.Cut(d.RuntimeVersion, ".")
			cuda, _ := strconv.Atoi(major)
			sub, _ := strconv.Atoi(minor)
			fmt.Fprintf(&b, "driver %s\ncuda %d\n", d.DriverVersion, cuda*1000+sub*10)
		}
		arch := nvidia.Architecture(d.Family)
		ccMajor, ccMinor, _ := strings.Cut(d.ComputeCapability, ".")
		fmt.Fprintf(&b, "card %s|%s|%d|%d|%d|%s|%s\n", d.UUID, d.Product, d.MemoryMiB, d.Cores, arch, ccMajor, ccMinor)
		// A card in MIG mode lists its profiles, each under the NVML_GPU_INSTANCE_PROFILE_<n>_SLICE constant the
		// agent asks for (1_SLICE_REV2, 9, for one slice with two memory slices) and the profile ID an H100's or
		// A100's driver gives it, which differs from the constant as on a real card. ProductProfiles has no
		// other shape.
		for _, p := range d.Partitions {
			profile, ok := map[int32][2]int{1: {0, 19}, 2: {1, 14}, 3: {2, 9}, 4: {3, 5}, 7: {4, 0}}[p.ComputeSlices]
			if p.ComputeSlices == 1 && p.MemorySlices == 2 {
				profile = [2]int{9, 15}
			}
			if !ok {
				continue
			}
			starts := make([]string, len(p.Placements))
			for i, s := range p.Placements {
				starts[i] = strconv.Itoa(int(s))
			}
			fmt.Fprintf(&b, "mig %s|%d|%d|%s|%d|%d|%d|%d|%s\n", d.UUID, profile[0], profile[1], p.Name, p.MemoryMiB,
				p.ComputeSlices, p.Count, p.MemorySlices, strings.Join(starts, ","))
		}
	}
	return b.String()
}

// Freeze freezes (frozen true) or thaws a container on a real node, by its ID (a Pod's containerID without
// its containerd:// prefix), as `docker pause` and `docker unpause` do.
func (c *Cluster) Freeze(node, containerID string, frozen bool) error {
	return realnode.Freeze(c.path("nodes", node), containerID, frozen)
}

// NodeRoot is a real node's root filesystem as its own processes see it (its hardware fixtures mounted),
// reached through its supervisor's /proc/<pid>/root.
func (c *Cluster) NodeRoot(name string) (string, error) {
	data, err := os.ReadFile(c.path("pids", nodeComponent(name)+".pid"))
	if err != nil {
		return "", errors.Wrapf(err, "node %s is not running", name)
	}
	return "/proc/" + strings.TrimSpace(string(data)) + "/root", nil
}
