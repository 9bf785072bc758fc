// Package rdma finds a node's RDMA devices (InfiniBand and RoCE host channel adapters) through sysfs: a PCI
// function the kernel's RDMA stack drives lists its devices under its own directory
// (/sys/bus/pci/devices/<address>/infiniband/mlx5_0), with their ports' state and link layer, and the verbs
// character devices a process opens (infiniband_verbs/uverbs0, /dev/infiniband/uverbs0). Soft-RoCE devices,
// which sit on no PCI function, are not counted: they carry no GPUDirect traffic.
package rdma

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// DevDir is where the kernel makes the RDMA character devices.
const DevDir = "/dev/infiniband"

// NICVendorIDs are the PCI vendor IDs of the NICs whose RDMA devices the kernel's RDMA stack drives, as NFD
// labels a node that has one (feature.node.kubernetes.io/pci-<id>.present): Mellanox/NVIDIA networking
// (mlx5), Broadcom (bnxt_re), Chelsio (iw_cxgb4), Marvell/QLogic (qedr), Amazon's EFA, Huawei (hns) and
// Alibaba (erdma). Intel's (irdma) is not: its vendor ID labels nearly every server, RDMA or not.
var NICVendorIDs = []string{"15b3", "14e4", "1425", "1077", "1d0f", "19e5", "1ded"}

// Device is one RDMA device of the node.
type Device struct {
	// Name is the kernel's name of the device (mlx5_0).
	Name string
	// PCIAddress is the PCI function it belongs to (0000:3b:00.0).
	PCIAddress string
	// LinkLayer is its first port's link layer: InfiniBand, or Ethernet for RoCE.
	LinkLayer string
	// Active says whether a port of it is up (state 4: ACTIVE), so traffic can flow.
	Active bool
	// Verbs are its verbs character devices' names under DevDir (uverbs0).
	Verbs []string
	// Virtual says it sits on an SR-IOV virtual function (its PCI function links its physical one, physfn):
	// handed out one to a container, apart from the physical functions' devices.
	Virtual bool
}

// Scan returns the RDMA devices of the PCI functions under root (/sys/bus/pci/devices), sorted by name. A
// function without an infiniband directory has none; a root that cannot be read is an error.
func Scan(root string) ([]Device, error) {
	functions, err := os.ReadDir(root)
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the PCI devices")
	}
	var out []Device
	for _, f := range functions {
		fn := filepath.Join(root, f.Name())
		names, err := os.ReadDir(filepath.Join(fn, "infiniband"))
		if err != nil {
			continue
		}
		verbs := verbsByDevice(fn)
		_, err = os.Lstat(filepath.Join(fn, "physfn"))
		virtual := err == nil
		for _, n := range names {
			d := Device{Name: n.Name(), PCIAddress: f.Name(), Verbs: verbs[n.Name()], Virtual: virtual}
			ports, _ := os.ReadDir(filepath.Join(fn, "infiniband", n.Name(), "ports"))
			for _, p := range ports {
				dir := filepath.Join(fn, "infiniband", n.Name(), "ports", p.Name())
				if d.LinkLayer == "" {
					d.LinkLayer = read(filepath.Join(dir, "link_layer"))
				}
				// The kernel writes the state as "4: ACTIVE".
				if strings.HasSuffix(read(filepath.Join(dir, "state")), "ACTIVE") {
					d.Active = true
				}
			}
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// verbsByDevice maps each RDMA device of a PCI function to its verbs character devices, from
// infiniband_verbs/uverbsN/ibdev.
func verbsByDevice(fn string) map[string][]string {
	out := map[string][]string{}
	entries, _ := os.ReadDir(filepath.Join(fn, "infiniband_verbs"))
	for _, e := range entries {
		if dev := read(filepath.Join(fn, "infiniband_verbs", e.Name(), "ibdev")); dev != "" {
			out[dev] = append(out[dev], e.Name())
		}
	}
	return out
}

// Physical returns the devices on physical functions, in order.
func Physical(devices []Device) []Device { return pick(devices, false) }

// Virtual returns the devices on SR-IOV virtual functions, in order.
func Virtual(devices []Device) []Device { return pick(devices, true) }

func pick(devices []Device, virtual bool) []Device {
	var out []Device
	for _, d := range devices {
		if d.Virtual == virtual {
			out = append(out, d)
		}
	}
	return out
}

// Capable reports whether the node can carry RDMA traffic: one of its devices has a port up.
func Capable(devices []Device) bool {
	for _, d := range devices {
		if d.Active {
			return true
		}
	}
	return false
}

func read(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
