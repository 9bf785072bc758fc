// Package simulated reads the inventory file that describes a simulated cluster: its nodes, their CPUs and
// their accelerators. The local cluster creates one KWOK node per entry, and the simulated device manager
// reports the entry's accelerators as if it had detected them.
package simulated

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/gpustack/gpustack-operator/providers/nvidia"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Inventory is the whole file.
type Inventory struct {
	// Nodes are the cluster's nodes.
	Nodes []Node `json:"nodes"`
}

// Node is one node of the simulated cluster.
type Node struct {
	// Name is the Node's name.
	Name string `json:"name"`
	// OS is the kubernetes.io/os label (linux).
	OS string `json:"os"`
	// Arch is the kubernetes.io/arch label (amd64).
	Arch string `json:"arch"`
	// CPU is the node's processor.
	CPU CPU `json:"cpu"`
	// Memory is the node's memory (16Gi).
	Memory resource.Quantity `json:"memory"`
	// Storage is the node's ephemeral storage (200Gi).
	Storage resource.Quantity `json:"storage"`
	// Labels are extra labels of the Node.
	Labels map[string]string `json:"labels,omitempty"`
	// Accelerators are the node's cards, one entry per product.
	Accelerators []Accelerators `json:"accelerators,omitempty"`
	// RDMA are the node's RDMA NICs (InfiniBand or RoCE host channel adapters).
	RDMA []RDMANIC `json:"rdma,omitempty"`
}

// maxVirtualFunctions is the most SR-IOV virtual functions a simulated NIC may have (a ConnectX-6's limit).
const maxVirtualFunctions = 127

// RDMANIC is one RDMA NIC of a node, with one port.
type RDMANIC struct {
	// LinkLayer is InfiniBand, or Ethernet for RoCE; InfiniBand when empty.
	LinkLayer string `json:"linkLayer,omitempty"`
	// Down says its port is down.
	Down bool `json:"down,omitempty"`
	// VirtualFunctions is how many SR-IOV virtual functions it has, each with an RDMA device of its own
	// (device.gpustack.ai/rdma.partitioned); none by default.
	VirtualFunctions int32 `json:"virtualFunctions,omitempty"`
}

// CPU is a node's processor as NFD and /proc/cpuinfo would report it.
type CPU struct {
	// Vendor is the cpuid vendor as NFD reports it (AMD, Intel).
	Vendor string `json:"vendor"`
	// Model is the CPU model name (AMD EPYC 7R32).
	Model string `json:"model"`
	// Cores is the number of cores the node offers.
	Cores int64 `json:"cores"`
	// Family and ID are NFD's cpu-model.family and cpu-model.id, used when the model name is unknown.
	Family string `json:"family,omitempty"`
	// ID is NFD's cpu-model.id.
	ID string `json:"id,omitempty"`
}

// Accelerators are count identical cards of one product.
type Accelerators struct {
	// Vendor is the manufacturer key (nvidia, amd, ascend, ...).
	Vendor string `json:"vendor"`
	// Product is the product name as the driver reports it (NVIDIA A10G).
	Product string `json:"product"`
	// Count is the number of cards.
	Count int32 `json:"count"`
	// Memory is one card's memory (24Gi).
	Memory resource.Quantity `json:"memory"`
	// Cores is one card's compute cores.
	Cores int64 `json:"cores,omitempty"`
	// Family is the architecture family (Ampere).
	Family string `json:"family,omitempty"`
	// ComputeCapability is the compute capability (8.6).
	ComputeCapability string `json:"computeCapability,omitempty"`
	// DriverVersion is the driver's version.
	DriverVersion string `json:"driverVersion,omitempty"`
	// RuntimeVersion is the compute runtime's version.
	RuntimeVersion string `json:"runtimeVersion,omitempty"`
	// PartitionMode puts the cards in a hardware partitioning mode: "mig" gives them the product's MIG
	// profiles (NVIDIA products only), so they offer partitions and nothing else. Empty: not partitioned.
	PartitionMode string `json:"partitionMode,omitempty"`
}

// Load reads and validates an inventory file.
func Load(path string) (*Inventory, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, errors.Wrap(err, "cannot read inventory")
	}
	inv, err := Parse(data)
	if err != nil {
		return nil, errors.Wrapf(err, "%s", path)
	}
	return inv, nil
}

// Parse decodes and validates an inventory. Unknown fields are errors, so a typo never goes unnoticed.
func Parse(data []byte) (*Inventory, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("inventory is empty: it needs a nodes list")
	}
	// Decode the list first and each entry on its own, so a strict-decoding error names its entry.
	var raw struct {
		Nodes []json.RawMessage `json:"nodes"`
	}
	if err := yaml.UnmarshalStrict(data, &raw); err != nil {
		return nil, errors.Wrap(err, "cannot parse inventory")
	}
	inv := &Inventory{Nodes: make([]Node, len(raw.Nodes))}
	for i, r := range raw.Nodes {
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&inv.Nodes[i]); err != nil {
			return nil, errors.Errorf("nodes[%d]: cannot parse: %s", i, strings.TrimPrefix(err.Error(), "json: "))
		}
	}
	if err := inv.Validate(); err != nil {
		return nil, err
	}
	return inv, nil
}

var versionLike = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z._-]*$`)

// Validate checks every entry and names the first bad one by index, node name and field.
func (inv *Inventory) Validate() error {
	if len(inv.Nodes) == 0 {
		return errors.New("nodes: at least one node is required")
	}
	seen := map[string]int{}
	for i := range inv.Nodes {
		n := &inv.Nodes[i]
		where := fmt.Sprintf("nodes[%d]", i)
		if n.Name != "" {
			where += fmt.Sprintf(" (%s)", n.Name)
		}
		if err := n.validate(); err != nil {
			return errors.Wrapf(err, "%s", where)
		}
		if j, dup := seen[n.Name]; dup {
			return errors.Errorf("%s: name: duplicates nodes[%d]", where, j)
		}
		seen[n.Name] = i
	}
	return nil
}

func (n *Node) validate() error {
	if n.Name == "" {
		return errors.New("name: required")
	}
	if errs := validation.IsDNS1123Subdomain(n.Name); len(errs) > 0 {
		return errors.Errorf("name: %q is not a valid node name: %s", n.Name, strings.Join(errs, "; "))
	}
	if n.OS == "" {
		n.OS = "linux"
	}
	if n.Arch == "" {
		return errors.New("arch: required (amd64, arm64, ...)")
	}
	for field, v := range map[string]string{"os": n.OS, "arch": n.Arch} {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 || v == "" {
			return errors.Errorf("%s: %q is not a valid label value", field, v)
		}
	}
	if n.CPU.Cores <= 0 {
		return errors.Errorf("cpu.cores: must be a positive number, got %d", n.CPU.Cores)
	}
	if n.Memory.Sign() <= 0 {
		return errors.New("memory: must be a positive quantity such as 16Gi")
	}
	if n.Storage.Sign() <= 0 {
		return errors.New("storage: must be a positive quantity such as 200Gi")
	}
	for k, v := range n.Labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return errors.Errorf("labels: key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return errors.Errorf("labels[%s]: %s", k, strings.Join(errs, "; "))
		}
	}
	for j := range n.RDMA {
		switch l := &n.RDMA[j].LinkLayer; *l {
		case "":
			*l = "InfiniBand"
		case "InfiniBand", "Ethernet":
		default:
			return errors.Errorf("rdma[%d].linkLayer: unknown link layer %q; known: InfiniBand, Ethernet", j, *l)
		}
		if vfs := n.RDMA[j].VirtualFunctions; vfs < 0 || vfs > maxVirtualFunctions {
			return errors.Errorf("rdma[%d].virtualFunctions: %d is not between 0 and %d", j, vfs, maxVirtualFunctions)
		}
	}
	products := map[string]bool{}
	for j := range n.Accelerators {
		a := &n.Accelerators[j]
		if err := a.validate(); err != nil {
			return errors.Errorf("accelerators[%d].%w", j, err)
		}
		if products[a.Vendor+"/"+a.Product] {
			return errors.Errorf("accelerators[%d]: product %q is listed twice: give one entry with its count", j, a.Product)
		}
		products[a.Vendor+"/"+a.Product] = true
	}
	return nil
}

func (a *Accelerators) validate() error {
	v, ok := vendors.Lookup(a.Vendor)
	if !ok {
		return errors.Errorf("vendor: unknown vendor %q; known vendors: %s", a.Vendor, strings.Join(vendors.Keys(), ", "))
	}
	a.Vendor = v.Key
	if strings.TrimSpace(a.Product) == "" {
		return errors.Errorf("product: required (the name the driver reports, e.g. \"NVIDIA A10G\")")
	}
	if a.Count <= 0 {
		return errors.Errorf("count: must be a positive number, got %d", a.Count)
	}
	if a.Memory.Sign() <= 0 {
		return errors.New("memory: must be a positive quantity such as 24Gi")
	}
	if a.Cores < 0 {
		return errors.Errorf("cores: must not be negative, got %d", a.Cores)
	}
	switch a.PartitionMode {
	case "":
	case "mig":
		if a.Vendor != "nvidia" {
			return errors.Errorf("partitionMode: mig is simulated for NVIDIA products only, not %s", a.Vendor)
		}
		if _, ok := nvidia.ProductProfiles(a.Product); !ok {
			return errors.Errorf("partitionMode: %q has no MIG; MIG products: %s", a.Product, strings.Join(nvidia.MIGProducts(), ", "))
		}
	default:
		return errors.Errorf("partitionMode: unknown mode %q; known: mig", a.PartitionMode)
	}
	for field, s := range map[string]string{
		"computeCapability": a.ComputeCapability, "driverVersion": a.DriverVersion,
		"runtimeVersion": a.RuntimeVersion, "family": a.Family,
	} {
		if s != "" && !versionLike.MatchString(s) {
			return errors.Errorf("%s: %q may hold only letters, digits, '.', '_' and '-'", field, s)
		}
	}
	return nil
}
