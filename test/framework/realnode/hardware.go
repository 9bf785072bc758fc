package realnode

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"golang.org/x/sys/unix"

	"github.com/gpustack/gpustack-operator/providers/cpuinfo"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs/pcisysfstest"
)

// PCIDevice is one card of a simulated node as the PCI bus shows it.
type PCIDevice struct {
	// Class is the PCI class code, six hex digits (030200: a 3D controller).
	Class string `json:"class"`
	// Vendor and Device are the PCI vendor and device IDs, four hex digits each.
	Vendor string `json:"vendor"`
	Device string `json:"device"`
	// RDMA is the RDMA device of a NIC the kernel's RDMA stack drives; nil for others.
	RDMA *RDMAPort `json:"rdma,omitempty"`
	// PhysFn is the PCI address of the physical function an SR-IOV virtual function belongs to, which the
	// function links as physfn; empty for a physical function.
	PhysFn string `json:"physfn,omitempty"`
}

// RDMAPort is the RDMA device of a PCI function, with its one port, as the kernel lists it under the function.
type RDMAPort struct {
	// Device and Verbs are the device's and its verbs character device's names (mlx5_0, uverbs0).
	Device string `json:"device"`
	Verbs  string `json:"verbs"`
	// LinkLayer is InfiniBand, or Ethernet for RoCE; State the port's state (4: ACTIVE, 1: DOWN).
	LinkLayer string `json:"linkLayer"`
	State     string `json:"state"`
}

// PCIAddress is the address the node's bus shows its i-th PCI device (of Config.PCIDevices) at.
func PCIAddress(i int) string { return fmt.Sprintf("0000:%02x:00.0", 0x10+i) }

// CPU is a simulated node's processor as its kernel would show it.
type CPU struct {
	// Vendor is the vendor by cpuid's name (Intel, AMD).
	Vendor string `json:"vendor"`
	// Name is the brand string.
	Name string `json:"name"`
	// Family and Model are the decimal cpuid family and model.
	Family string `json:"family"`
	Model  string `json:"model"`
	// Cores is the number of processors the node shows, each a core of its own.
	Cores int `json:"cores"`
}

// NVIDIADriver is a simulated node's NVIDIA driver: the stand-in NVML library (hack/nvml-standin) and its
// fixture, the cards it reports, installed where the GPU Operator's containerized driver would be.
type NVIDIADriver struct {
	// Library is the stand-in libnvidia-ml.so.1 built here.
	Library string `json:"library"`
	// Fixture is the library's fixture file (its format is in hack/nvml-standin/libnvidia-ml.c).
	Fixture string `json:"fixture"`
}

// nvidiaDriverRoot is where the node's NVIDIA driver is installed, one of nvidia.DriverRoots.
const nvidiaDriverRoot = "/run/nvidia/driver"

// VendorTools are a simulated node's management tools of the vendors other than NVIDIA: the stand-in tool
// (hack/smi-standin) under each tool's name with the answers it gives, installed in /usr/local/sbin of the
// node's root (one of smitool.HostToolDirs), where the agent finds and runs them as a driver installs them.
type VendorTools struct {
	// StandIn is the smi-standin program built here.
	StandIn string `json:"standIn"`
	// Names are the tools it stands in for (npu-smi, cnmon).
	Names []string `json:"names"`
	// Answers is its smi-standin.json: what each command line prints (smifixture renders them).
	Answers string `json:"answers"`
}

// vendorToolsDir is where a node's vendor tools are installed.
const vendorToolsDir = "/usr/local/sbin"

// hardwareFile is a fixture file and the path the node sees it at.
type hardwareFile struct{ fixture, target string }

// mountHardware puts the node's simulated hardware where the real hardware would be seen, in the node's own
// mount namespace: its PCI devices over /sys/bus/pci/devices, RDMA NICs with their RDMA devices under them (and
// their SR-IOV virtual functions, which link their physical one as physfn)
// (nfd-worker and the device managers read them through their /sys mounts), and, when the node has a CPU and memory of its own, its processors over
// /proc/cpuinfo and /sys/devices/system/node and its memory over /proc/meminfo, which the kubelet's cAdvisor
// reports as the Node's capacity and the cpu-info reporter reads.
func mountHardware(cfg Config) error {
	dir := filepath.Join(cfg.Dir, "hardware")
	if err := os.RemoveAll(dir); err != nil {
		return errors.Wrap(err, "cannot clear the hardware fixture")
	}
	files, links := map[string]string{}, map[string]string{}
	for i, d := range cfg.PCIDevices {
		dev := "pci/" + PCIAddress(i) + "/"
		for name, v := range map[string]string{
			"class": "0x" + d.Class, "vendor": "0x" + d.Vendor, "device": "0x" + d.Device,
			"subsystem_vendor": "0x" + d.Vendor, "subsystem_device": "0x0000", "numa_node": "-1",
		} {
			files[dev+name] = v + "\n"
		}
		if r := d.RDMA; r != nil {
			for name, v := range pcisysfstest.RDMA(nil, r.Device, r.Verbs, r.LinkLayer, r.State) {
				files[dev+name] = v
			}
		}
		if d.PhysFn != "" {
			links[dev+"physfn"] = "../" + d.PhysFn
		}
	}
	mounts := []hardwareFile{{"pci", "/sys/bus/pci/devices"}}
	if cfg.CPU.Cores > 0 {
		hostCPUs, err := machineCPUs()
		if err != nil {
			return err
		}
		files["cpuinfo"] = cpuinfoFixture(cfg.CPU)
		// cAdvisor counts the threads of every NUMA node, and the kubelet writes the CPU ids it saw into its
		// cgroups' cpusets, which the kernel refuses for a CPU it lacks: so the node's processors are the
		// machine's, repeated over as many NUMA nodes as it takes to count Cores of them.
		for i := range cfg.CPU.Cores {
			cpu := fmt.Sprintf("numa/node%d/cpu%d/", i/len(hostCPUs), hostCPUs[i%len(hostCPUs)])
			files[cpu+"online"] = "1\n"
			files[cpu+"topology/core_id"] = fmt.Sprintf("%d\n", i)
			files[cpu+"topology/physical_package_id"] = "0\n"
		}
		mounts = append(mounts, hardwareFile{"cpuinfo", "/proc/cpuinfo"}, hardwareFile{"numa", "/sys/devices/system/node"})
	}
	if cfg.MemoryKiB > 0 {
		files["meminfo"] = fmt.Sprintf("MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB\n"+
			"Buffers:               0 kB\nCached:                0 kB\nSwapTotal:             0 kB\nSwapFree:              0 kB\n",
			cfg.MemoryKiB, cfg.MemoryKiB, cfg.MemoryKiB)
		mounts = append(mounts, hardwareFile{"meminfo", "/proc/meminfo"})
	}
	if cfg.NVIDIADriver != nil {
		lib, err := os.ReadFile(cfg.NVIDIADriver.Library)
		if err != nil {
			return errors.Wrap(err, "cannot read the stand-in NVML library")
		}
		files["nvidia-driver/usr/lib64/libnvidia-ml.so.1"] = string(lib)
		files["nvidia-driver/usr/lib64/libnvidia-ml.fixture"] = cfg.NVIDIADriver.Fixture
		if err := os.MkdirAll(nvidiaDriverRoot, 0o755); err != nil {
			return errors.Wrap(err, "cannot create the NVIDIA driver root")
		}
		mounts = append(mounts, hardwareFile{"nvidia-driver", nvidiaDriverRoot})
	}
	executable := map[string]bool{}
	if t := cfg.VendorTools; t != nil {
		standIn, err := os.ReadFile(t.StandIn)
		if err != nil {
			return errors.Wrap(err, "cannot read the stand-in vendor tool")
		}
		for _, name := range t.Names {
			files["tools/"+name], executable["tools/"+name] = string(standIn), true
		}
		files["tools/smi-standin.json"] = t.Answers
		if err := os.MkdirAll(vendorToolsDir, 0o755); err != nil {
			return errors.Wrap(err, "cannot create the vendor tools' directory")
		}
		mounts = append(mounts, hardwareFile{"tools", vendorToolsDir})
	}
	for _, d := range []string{"pci", "numa"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return errors.Wrap(err, "cannot write the hardware fixture")
		}
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return errors.Wrap(err, "cannot write the hardware fixture")
		}
		mode := os.FileMode(0o444)
		if executable[name] {
			mode = 0o555
		}
		if err := os.WriteFile(path, []byte(data), mode); err != nil {
			return errors.Wrap(err, "cannot write the hardware fixture")
		}
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			return errors.Wrap(err, "cannot write the hardware fixture")
		}
	}
	for _, m := range mounts {
		if err := syscall.Mount(filepath.Join(dir, m.fixture), m.target, "", syscall.MS_BIND, ""); err != nil {
			return errors.Wrapf(err, "cannot mount the node's %s", m.target)
		}
	}
	return nil
}

// cpuinfoFixture is /proc/cpuinfo of a processor of cores cores, one thread each, as an x86 kernel lists it.
func cpuinfoFixture(cpu CPU) string {
	vendor := cpu.Vendor
	for raw, name := range cpuinfo.VendorNames {
		if name == cpu.Vendor {
			vendor = raw
		}
	}
	var b strings.Builder
	for i := range cpu.Cores {
		fmt.Fprintf(&b, "processor\t: %d\nvendor_id\t: %s\ncpu family\t: %s\nmodel\t\t: %s\nmodel name\t: %s\nstepping\t: 0\n"+
			"cpu MHz\t\t: 2500.000\nphysical id\t: 0\nsiblings\t: %d\ncore id\t\t: %d\ncpu cores\t: %d\nclflush size\t: 64\n\n",
			i, vendor, cpu.Family, cpu.Model, cpu.Name, cpu.Cores, i, cpu.Cores)
	}
	return b.String()
}

// machineCPUs are the ids of the CPUs this process may run on.
func machineCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, errors.Wrap(err, "cannot read the machine's CPUs")
	}
	var ids []int
	for i := range 1024 {
		if set.IsSet(i) {
			ids = append(ids, i)
		}
	}
	return ids, nil
}

// mountDisk gives the node a disk of its own, of DiskBytes, at Dir/root, where its state paths live: a sparse
// file with an ext4 filesystem, mounted through a loop device in the node's mount namespace (freed when the
// namespace goes). The kubelet's cAdvisor reads the machine's own root filesystem as no device it knows, so
// without it the node could report no ephemeral storage; with it the Node's capacity is the disk's, as on a
// real node. A node started again keeps its disk, as a rebooted machine does.
func mountDisk(cfg Config) error {
	if cfg.DiskBytes <= 0 {
		return nil
	}
	img, root := filepath.Join(cfg.Dir, "disk.img"), filepath.Join(cfg.Dir, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return errors.Wrap(err, "cannot create the node's root")
	}
	if _, err := os.Stat(img); os.IsNotExist(err) {
		f, err := os.Create(img)
		if err != nil {
			return errors.Wrap(err, "cannot create the node's disk")
		}
		err = f.Truncate(cfg.DiskBytes)
		_ = f.Close()
		if err != nil {
			return errors.Wrap(err, "cannot size the node's disk")
		}
		if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1", img).CombinedOutput(); err != nil {
			return errors.Wrapf(err, "cannot make the node's filesystem: %s", out)
		}
	}
	if out, err := exec.Command("mount", "-o", "loop", img, root).CombinedOutput(); err != nil {
		return errors.Wrapf(err, "cannot mount the node's disk: %s", out)
	}
	return nil
}
