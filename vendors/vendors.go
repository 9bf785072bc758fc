// Package vendors is the one table of the nine accelerator manufacturers the operator supports: their PCI
// vendor IDs, Kubernetes resource names, runtime classes and slicing capabilities. Every other part of the
// project looks vendors up here. The GPUSTACK_<MFR>_* environment variables override single entries: a
// process applies them once at start (Configure), so the package itself reads no environment and a lookup's
// answer depends on nothing but the table.
package vendors

import (
	"sort"
	"strings"
)

// Vendor is one accelerator manufacturer.
type Vendor struct {
	// Key is the lowercase manufacturer key used in labels and resource names (nvidia).
	Key string
	// DisplayName is the manufacturer's name for people (NVIDIA).
	DisplayName string
	// PCIVendorID is the manufacturer's PCI vendor ID in lowercase hex (10de).
	PCIVendorID string
	// ResourceName is the Kubernetes extended resource of one whole card (nvidia.com/gpu).
	ResourceName string
	// RuntimeClass is the RuntimeClass that injects the vendor's driver, empty when there is none.
	RuntimeClass string
	// Class is the kind of accelerator: GPU, NPU, MLU, DCU or PPU.
	Class string
	// SlicesPerCard is the number of soft slices one card holds; 0 when the vendor has no soft slicing, or
	// when this operator cannot enforce one (SliceGap says why): a slice is only offered where its budget holds.
	SlicesPerCard int32
	// CoresOvercommit is true when slice compute budgets may add up to more than 100 %.
	CoresOvercommit bool
	// PartitionKind is the hardware partitioning scheme (mig), empty when the vendor has none.
	PartitionKind string
	// SliceGap says why the vendor's cards are not soft-sliced although the vendor has soft slicing: its
	// enforcer is not built into the device manager yet. Empty when SlicesPerCard says all.
	SliceGap string
	// RuntimeInjects is true when the vendor's RuntimeClass is the one that injects its driver (NVIDIA, Moore
	// Threads) or its devices (Ascend, Iluvatar) into containers: the chart creates that RuntimeClass. An
	// Instance's Pod names its vendor's RuntimeClass whenever the class exists, whoever made it.
	RuntimeInjects bool
	// PCIClass restricts the vendor's cards to the PCI functions whose class starts with it (0302, a 3D
	// controller), set when GPUSTACK_<MFR>_PCI_VENDOR_ID is given as class_vendor; empty takes every class the
	// node's scan admits (GPUSTACK_PCI_CLASS_PREFIXES).
	PCIClass string
}

// PCILabel is the vendor's part of NFD's PCI label feature.node.kubernetes.io/pci-<PCILabel>.present, which the
// device manager's DaemonSet selects: the vendor ID (10de), as NFD writes it with deviceLabelFields [vendor],
// or class_vendor (0302_10de) when PCIClass is set, as NFD writes it with deviceLabelFields [class, vendor].
func (v Vendor) PCILabel() string {
	if v.PCIClass == "" {
		return v.PCIVendorID
	}
	return v.PCIClass + "_" + v.PCIVendorID
}

// OwnsPCI reports whether a PCI function of this vendor ID and class (lowercase hex, 10de and 030200) is
// one of the vendor's cards.
func (v Vendor) OwnsPCI(vendorID, class string) bool {
	return vendorID == v.PCIVendorID && strings.HasPrefix(class, v.PCIClass)
}

// ProfilePrefix is the start of the vendor's per-profile partition keys, <base>.partitioned.<kind>- (a Pod asks
// nvidia.com/gpu.partitioned.mig-3g.40gb); empty when the vendor has no partitioning kind.
func (v Vendor) ProfilePrefix() string {
	if v.PartitionKind == "" {
		return ""
	}
	return v.ResourceName + ".partitioned." + v.PartitionKind + "-"
}

// builtin lists the vendors in the order the documentation does.
var builtin = []Vendor{
	{"nvidia", "NVIDIA", "10de", "nvidia.com/gpu", "nvidia", "GPU", 128, true, "mig", "", true, ""},
	{"amd", "AMD", "1002", "amd.com/gpu", "amd", "GPU", 128, true, "", "", false, ""},
	{"ascend", "Huawei Ascend", "19e5", "huawei.com/npu", "ascend", "NPU", 63, true, "", "", true, ""},
	{"cambricon", "Cambricon", "cabc", "cambricon.com/mlu", "cambricon", "MLU", 0, false, "",
		"the device manager cannot create Cambricon's sMLU profiles (cnDev), which enforce a slice's budget", false, ""},
	{"hygon", "Hygon", "1d94", "hygon.com/dcu", "hygon", "DCU", 0, false, "mig",
		"the device manager cannot write Hygon's per-Pod vdev configuration, which enforces a slice's budget", false, ""},
	{"iluvatar", "Iluvatar", "1e3e", "iluvatar.com/gpu", "iluvatar", "GPU", 16, false, "", "", true, ""},
	{"metax", "MetaX", "9999", "metax-tech.com/gpu", "metax", "GPU", 0, false, "",
		"the device manager cannot create MetaX's sGPUs (sysfs fixed-share), which enforce a slice's budget", false, ""},
	{"mthreads", "Moore Threads", "1ed5", "mthreads.com/gpu", "mthreads", "GPU", 0, false, "",
		"the device manager cannot drive Moore Threads' sGPU kernel module, which enforces a slice's budget", true, ""},
	{"thead", "T-Head", "1ded", "alibabacloud.com/ppu", "", "PPU", 16, false, "mig", "", false, ""},
}

// aliases maps other spellings of a manufacturer to its key.
var aliases = map[string]string{
	"huawei": "ascend", "huawei-ascend": "ascend", "moore-threads": "mthreads", "moorethreads": "mthreads",
	"t-head": "thead", "alibaba": "thead", "metax-tech": "metax",
}

// table is the table every lookup answers from: builtin, with the overrides Configure applied.
var table = builtin

// Configure applies the GPUSTACK_<MFR>_* overrides read through getenv (os.Getenv) to the table All and Lookup
// answer from. A process calls it once at start, before it looks a vendor up: the operator's main and the
// composition functions' server do, so the worker, its device managers (which inherit the worker's GPUSTACK_*
// variables) and a function Pod given the same variables compute the same names.
func Configure(getenv func(string) string) {
	out := make([]Vendor, len(builtin))
	for i, v := range builtin {
		out[i] = withOverrides(v, getenv)
	}
	table = out
}

// All returns every vendor.
func All() []Vendor {
	return append([]Vendor(nil), table...)
}

// Keys returns every vendor key, sorted.
func Keys() []string {
	keys := make([]string, len(table))
	for i, v := range table {
		keys[i] = v.Key
	}
	sort.Strings(keys)
	return keys
}

// Lookup finds a vendor by key, alias or display name, case-insensitively.
func Lookup(name string) (Vendor, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.ReplaceAll(n, " ", "-")
	if k, ok := aliases[n]; ok {
		n = k
	}
	for _, v := range table {
		if v.Key == n || strings.EqualFold(strings.ReplaceAll(v.DisplayName, " ", "-"), n) {
			return v, true
		}
	}
	return Vendor{}, false
}

// withOverrides applies GPUSTACK_<MFR>_PCI_VENDOR_ID, _ACCELERATABLE_RESOURCE_NAME,
// _ACCELERATABLE_RUNTIME_NAME and _PARTITION_KIND read through getenv.
func withOverrides(v Vendor, getenv func(string) string) Vendor {
	prefix := "GPUSTACK_" + strings.ToUpper(v.Key) + "_"
	if id := strings.ToLower(getenv(prefix + "PCI_VENDOR_ID")); id != "" {
		// The value is a vendor ID (10de) or a class_vendor pair (0302_10de, as NFD's labels write it), which
		// takes only that class of the vendor's functions.
		v.PCIClass = ""
		if i := strings.LastIndexAny(id, "_:"); i >= 0 {
			v.PCIClass, id = id[:i], id[i+1:]
		}
		v.PCIVendorID = id
	}
	if r := getenv(prefix + "ACCELERATABLE_RESOURCE_NAME"); r != "" {
		v.ResourceName = r
	}
	if r, ok := lookupEnv(getenv, prefix+"ACCELERATABLE_RUNTIME_NAME"); ok {
		v.RuntimeClass = r
	}
	if k, ok := lookupEnv(getenv, prefix+"PARTITION_KIND"); ok {
		v.PartitionKind = k
	}
	return v
}

// lookupEnv treats the value "none" as an explicit empty override.
func lookupEnv(getenv func(string) string, name string) (string, bool) {
	v := getenv(name)
	if v == "" {
		return "", false
	}
	if strings.EqualFold(v, "none") {
		return "", true
	}
	return v, true
}
