// Package pcisysfstest builds fake /sys/bus/pci/devices trees for the tests of the backends that scan the bus.
package pcisysfstest

import (
	"os"
	"path/filepath"
	"testing"
)

// Function returns the sysfs attributes of one PCI function: vendor and device IDs and class as the kernel
// writes them (0x10de, 0x2237, 0x030200).
func Function(vendor, device, class string) map[string]string {
	return map[string]string{"vendor": vendor + "\n", "device": device + "\n", "class": class + "\n", "numa_node": "-1\n"}
}

// RDMA adds to a PCI function's attributes an RDMA device with one port in state (4: ACTIVE, 1: DOWN) on link
// layer (InfiniBand, Ethernet) and its verbs character device, laid out as the kernel does under the function.
func RDMA(attrs map[string]string, device, verbs, linkLayer, state string) map[string]string {
	out := map[string]string{}
	for k, v := range attrs {
		out[k] = v
	}
	port := "infiniband/" + device + "/ports/1/"
	out[port+"state"], out[port+"link_layer"] = state+"\n", linkLayer+"\n"
	out["infiniband_verbs/"+verbs+"/ibdev"] = device + "\n"
	return out
}

// Tree writes a tree of PCI functions (address -> attribute -> content) under a temporary directory the test
// removes, and returns its root.
func Tree(t testing.TB, functions map[string]map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for addr, attrs := range functions {
		dir := filepath.Join(root, addr)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range attrs {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}
