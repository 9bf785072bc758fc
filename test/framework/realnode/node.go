package realnode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Config is one node, as the cluster that starts it writes it for the node's supervisor (Run).
type Config struct {
	// Name is the Node's name.
	Name string `json:"name"`
	// Index numbers the node from 1; it gives its addresses (NodeIP, PodCIDR).
	Index int `json:"index"`
	// Dir holds the node's state; its root/ is bind-mounted over the standard paths inside the node.
	Dir string `json:"dir"`
	// Kubelet and KubeProxy are the binaries built here.
	Kubelet   string `json:"kubelet"`
	KubeProxy string `json:"kubeProxy"`
	// Kubeconfig is the kubelet's (user system:node:<Name>), ProxyKubeconfig kube-proxy's.
	Kubeconfig      string `json:"kubeconfig"`
	ProxyKubeconfig string `json:"proxyKubeconfig"`
	// ClientCA verifies the clients the kubelet serves (the API server's kubelet client).
	ClientCA string `json:"clientCA"`
	// Images are image archives (docker save or OCI) imported into the node's containerd before its kubelet
	// starts: there is no registry to pull from.
	Images []string `json:"images"`
	// Labels are the administrator's labels, which the kubelet registers the Node with.
	Labels map[string]string `json:"labels,omitempty"`
	// PCIDevices are the node's simulated cards, which it shows at /sys/bus/pci/devices.
	PCIDevices []PCIDevice `json:"pciDevices,omitempty"`
	// CPU is the node's processor; the machine's when it has no cores.
	CPU CPU `json:"cpu"`
	// MemoryKiB is the node's memory; the machine's when 0.
	MemoryKiB int64 `json:"memoryKiB,omitempty"`
	// NVIDIADriver is the node's NVIDIA driver, when it has NVIDIA cards.
	NVIDIADriver *NVIDIADriver `json:"nvidiaDriver,omitempty"`
	// VendorTools are the node's other vendors' management tools, when it has their cards.
	VendorTools *VendorTools `json:"vendorTools,omitempty"`
	// DiskBytes is the size of the node's disk, which holds its state paths; without one they are directories
	// of the machine's, and the kubelet reports no ephemeral storage.
	DiskBytes int64 `json:"diskBytes,omitempty"`
}

// PauseImage is the sandbox image of every node: the name the kubelet of this version expects, built here.
const PauseImage = "registry.k8s.io/pause:3.10.1"

// BusyboxImage is the small user image every node holds, built here (hack/nodeimages): tests' Pods and the
// storage provisioner's helper Pods run it.
const BusyboxImage = "docker.io/library/busybox:1.35.0"

// UserImage is the walkthrough's user image, which every node holds: a stand-in built here (hack/nodeimages),
// as there is no registry to pull ubuntu:24.04 from.
const UserImage = "docker.io/library/ubuntu:24.04"

// EnforcerImage is the stand-in soft-slicing enforcers' image every node holds (hack/enforcer-standin), which
// the local cluster names in the chart's worker.deviceManager.enforcers.image.
const EnforcerImage = "localhost/gpustack/enforcer-standin:dev"

// stageEnv tells Run that it runs inside the node's namespaces.
const stageEnv = "GPUSTACK_REALNODE_STAGE"

// statePaths are the paths whose contents belong to the node, not the machine: each is bind-mounted from the
// node's root/ inside its mount namespace.
var statePaths = []string{
	"/var/lib/kubelet", "/var/lib/containerd", "/run/containerd", "/var/log/pods", "/var/log/containers",
	"/etc/cni/net.d", "/var/lib/cni", "/run/netns", "/var/lib/gpustack", "/etc/gpustack",
	"/run/cdi",
}

// ReadConfig reads the file that the cluster wrote for a node.
func ReadConfig(path string) (Config, error) {
	var cfg Config
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, errors.Wrap(err, "cannot read the node's configuration")
	}
	return cfg, errors.Wrap(json.Unmarshal(data, &cfg), "cannot read the node's configuration")
}

// WriteConfig writes the node's configuration to Dir/node.json and returns that path.
func WriteConfig(cfg Config) (string, error) {
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return "", errors.Wrap(err, "cannot create the node's directory")
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", errors.Wrap(err, "cannot write the node's configuration")
	}
	path := filepath.Join(cfg.Dir, "node.json")
	return path, errors.Wrap(os.WriteFile(path, data, 0o600), "cannot write the node's configuration")
}

// Run is the node's supervisor, started on the machine with the node's configuration file. It first moves
// itself into cgroups of its own (recorded in Dir/cgroups for StopNode) and re-executes itself in the node's
// network namespace, a new mount namespace and a new cgroup namespace; there it mounts the node's view of the
// machine, starts containerd, imports the images and runs the kubelet and kube-proxy until it is signalled.
func Run(ctx context.Context, configPath string) error {
	cfg, err := ReadConfig(configPath)
	if err != nil {
		return err
	}
	if os.Getenv(stageEnv) == "" {
		return enterNode(cfg)
	}
	return runNode(ctx, cfg)
}

// enterNode is the first stage: cgroups, then the same command again inside the namespaces.
func enterNode(cfg Config) error {
	hs, err := hierarchies("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	dirs, err := enterCgroups(hs, Namespace(cfg.Name))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir, "cgroups"), []byte(strings.Join(dirs, "\n")+"\n"), 0o600); err != nil {
		return errors.Wrap(err, "cannot record the node's cgroups")
	}
	self, err := os.Executable()
	if err != nil {
		return errors.Wrap(err, "cannot find this program")
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return errors.Wrap(err, "cannot find nsenter (util-linux)")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return errors.Wrap(err, "cannot find unshare (util-linux)")
	}
	argv := append([]string{"nsenter", "--net=/run/netns/" + Namespace(cfg.Name), "--",
		unshare, "--cgroup", "--mount", "--propagation", "slave", "--", self}, os.Args[1:]...)
	return errors.Wrap(syscall.Exec(nsenter, argv, append(os.Environ(), stageEnv+"=node")), "cannot enter the node's namespaces")
}

// runNode is the second stage, inside the node's namespaces.
func runNode(ctx context.Context, cfg Config) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := mountNode(cfg); err != nil {
		return err
	}
	if err := writeFiles(cfg); err != nil {
		return err
	}
	c := newComponents(cfg)
	defer c.terminate()
	if err := c.boot(ctx, true); err != nil {
		return err
	}
	// SIGHUP restarts the kubelet as a crash would (SIGKILL), the containers running on; SIGUSR1 reboots the
	// node.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGUSR1)
	defer signal.Stop(sigs)
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-c.exited:
			return err
		case sig := <-sigs:
			if sig == syscall.SIGUSR1 {
				if err := c.reboot(ctx); err != nil {
					return err
				}
				continue
			}
			c.stop(syscall.SIGKILL, "kubelet")
			if err := c.startKubelet(); err != nil {
				return err
			}
		}
	}
}

// mountNode gives the node its view of the machine: sysfs of its network namespace, the cgroup hierarchies as
// its cgroup namespace sees them (so the kubelet's cgroup root "/" is the node's own), and its state paths.
func mountNode(cfg Config) error {
	hs, err := hierarchies("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	if err := syscall.Unmount("/sys", syscall.MNT_DETACH); err != nil {
		return errors.Wrap(err, "cannot unmount the machine's /sys")
	}
	if err := syscall.Mount("sysfs", "/sys", "sysfs", 0, ""); err != nil {
		return errors.Wrap(err, "cannot mount the node's /sys")
	}
	if err := syscall.Mount("tmpfs", cgroupRoot, "tmpfs", 0, "mode=755"); err != nil {
		return errors.Wrapf(err, "cannot mount %s", cgroupRoot)
	}
	for _, h := range hs {
		if err := os.MkdirAll(h.Dir, 0o755); err != nil {
			return errors.Wrapf(err, "cannot create %s", h.Dir)
		}
		if err := syscall.Mount("cgroup", h.Dir, h.Type, 0, h.Options); err != nil {
			return errors.Wrapf(err, "cannot mount the cgroup hierarchy %s (%s)", h.Dir, h.Options)
		}
	}
	if err := mountHardware(cfg); err != nil {
		return err
	}
	// Mounts the kubelet makes below here (volumes) reach the containers that ask for them.
	if err := syscall.Mount("", "/", "", syscall.MS_SHARED|syscall.MS_REC, ""); err != nil {
		return errors.Wrap(err, "cannot make the node's mounts shared")
	}
	if err := mountDisk(cfg); err != nil {
		return err
	}
	for _, p := range statePaths {
		src := filepath.Join(cfg.Dir, "root", p)
		for _, d := range []string{src, p} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return errors.Wrapf(err, "cannot create %s", d)
			}
		}
		if err := syscall.Mount(src, p, "", syscall.MS_BIND, ""); err != nil {
			return errors.Wrapf(err, "cannot mount the node's %s", p)
		}
	}
	return nil
}

// writeFiles writes the configuration of containerd, the CNI plugins, the kubelet and kube-proxy.
func writeFiles(cfg Config) error {
	files := map[string]string{
		filepath.Join(cfg.Dir, "containerd.toml"): fmt.Sprintf(containerdConfig, runtimeHandlers()),
		"/etc/cni/net.d/10-gsk.conflist":          fmt.Sprintf(cniConfig, PodCIDR(cfg.Index)),
		filepath.Join(cfg.Dir, "resolv.conf"):     "nameserver " + DNSIP + "\n",
		filepath.Join(cfg.Dir, "kubelet.yaml"):    fmt.Sprintf(kubeletConfig, cfg.ClientCA, filepath.Join(cfg.Dir, "resolv.conf"), DNSIP),
		filepath.Join(cfg.Dir, "kube-proxy.yaml"): fmt.Sprintf(kubeProxyConfig, cfg.ProxyKubeconfig, cfg.Name, NodeIP(cfg.Index), ClusterCIDR),
	}
	for path, data := range files {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			return errors.Wrapf(err, "cannot write %s", path)
		}
	}
	return nil
}

func waitForSocket(ctx context.Context, path string, exited <-chan error) error {
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-exited:
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func labelFlag(labels map[string]string) string {
	var kv []string
	for k, v := range labels {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// StopNode stops a node started with its configuration in dir: every process in its cgroups (its supervisor,
// containerd, the kubelet, kube-proxy, the shims and every container), then its network namespace. A node
// that is not running is no error.
func StopNode(ctx context.Context, cfg Config) error {
	data, err := os.ReadFile(filepath.Join(cfg.Dir, "cgroups"))
	if err == nil {
		if err := killCgroups(strings.Fields(string(data)), 30*time.Second); err != nil {
			return errors.Wrapf(err, "cannot stop node %s", cfg.Name)
		}
		_ = os.Remove(filepath.Join(cfg.Dir, "cgroups"))
	}
	RemoveNode(ctx, cfg.Name, cfg.Index)
	return nil
}

// lastLines returns the last n lines of a file, for an error that says why a child exited.
func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
