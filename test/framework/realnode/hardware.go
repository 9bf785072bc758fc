package realnode

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// PCIDevice is one card of a simulated node as the PCI bus shows it.
type PCIDevice struct {
	// Class is the PCI class code, six hex digits (030200: a 3D controller).
	Class string `json:"class"`
	// Vendor and Device are the PCI vendor and device IDs, four hex digits each.
	Vendor string `json:"vendor"`
	Device string `json:"device"`
}

// pciFixture writes the node's PCI devices as sysfs shows them (one directory a device, named by its address,
// with the files NFD's pci source and the agent's bus scan read) under Dir/hardware/pci, and returns it.
func pciFixture(cfg Config) (string, error) {
	dir := filepath.Join(cfg.Dir, "hardware", "pci")
	if err := os.RemoveAll(dir); err != nil {
		return "", errors.Wrap(err, "cannot clear the PCI fixture")
	}
	for i, d := range cfg.PCIDevices {
		dev := filepath.Join(dir, fmt.Sprintf("0000:%02x:00.0", 0x10+i))
		if err := os.MkdirAll(dev, 0o755); err != nil {
			return "", errors.Wrap(err, "cannot write the PCI fixture")
		}
		files := map[string]string{
			"class": "0x" + d.Class, "vendor": "0x" + d.Vendor, "device": "0x" + d.Device,
			"subsystem_vendor": "0x" + d.Vendor, "subsystem_device": "0x0000", "numa_node": "-1",
		}
		for name, v := range files {
			if err := os.WriteFile(filepath.Join(dev, name), []byte(v+"\n"), 0o444); err != nil { //nolint:gosec // sysfs files are world-readable
				return "", errors.Wrap(err, "cannot write the PCI fixture")
			}
		}
	}
	return dir, nil
}

// mountHardware puts the node's simulated hardware where the real hardware would be seen: its PCI devices over
// the machine's at /sys/bus/pci/devices (in the node's own sysfs), so nfd-worker and the device agent, reading
// the node's /sys through their hostPath volumes, see the inventory's cards and nothing of this machine's.
func mountHardware(cfg Config) error {
	pci, err := pciFixture(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(pci, 0o755); err != nil {
		return errors.Wrap(err, "cannot write the PCI fixture")
	}
	return errors.Wrap(syscall.Mount(pci, "/sys/bus/pci/devices", "", syscall.MS_BIND, ""), "cannot mount the node's PCI devices")
}
