// Package smitool is the common engine of the backends that read a vendor's cards from PCI sysfs and from the
// machine-readable output of its management tool (rocm-smi, npu-smi, cnmon, ...). The bus says which cards are
// there; the tool says what they are. A card the bus lists and the tool does not describe is still reported,
// unhealthy, so a broken driver shows up as broken cards rather than as a node without accelerators.
package smitool

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Card is one card as a tool described it.
type Card struct {
	providers.Device
	// BusID is the card's PCI address as the tool prints it (00000000:65:00.0); empty when the tool does not
	// say, and the card is then matched to the bus by order.
	BusID string
}

// Query asks a vendor's tool for its cards through the runner.
type Query func(ctx context.Context, run Runner) ([]Card, error)

// Backend detects one vendor's cards.
type Backend struct {
	// Vendor is the manufacturer, with its PCI vendor ID.
	Vendor vendors.Vendor
	// SysfsRoot is the PCI device directory; pcisysfs.DefaultRoot when empty.
	SysfsRoot string
	// ClassPrefixes are the PCI classes that count as accelerators; pcisysfs.DefaultClassPrefixes when empty.
	ClassPrefixes []string
	// Runner runs the tool.
	Runner Runner
	// Query reads the cards from the tool's output.
	Query Query
}

// Name names the backend after its vendor.
func (b *Backend) Name() string { return b.Vendor.Key }

// Detect returns the vendor's cards on this node. No card on the bus and none from the tool is a node
// without this vendor, not an error. Cards the tool could not describe are returned unhealthy together with
// an error that says why.
func (b *Backend) Detect(ctx context.Context) ([]providers.Device, error) {
	root, prefixes := b.SysfsRoot, b.ClassPrefixes
	if root == "" {
		root = pcisysfs.DefaultRoot
	}
	if len(prefixes) == 0 {
		prefixes = pcisysfs.DefaultClassPrefixes
	}
	bus, _, busErr := pcisysfs.Scan(root, []string{b.Vendor.PCIVendorID}, prefixes)
	bus = slices.DeleteFunc(bus, func(f pcisysfs.Device) bool { return !b.Vendor.OwnsPCI(f.VendorID, f.Class) })
	if busErr == nil && len(bus) == 0 {
		return nil, nil
	}
	cards, queryErr := b.Query(ctx, b.Runner)
	if queryErr != nil {
		queryErr = errors.Wrapf(queryErr, "cannot read %s cards", b.Vendor.DisplayName)
	}
	if busErr != nil {
		// Without sysfs (a container without /sys) the tool's word is all there is.
		return b.finish(cards, nil), queryErr
	}
	devices, missing := b.merge(bus, cards)
	if queryErr != nil {
		return devices, queryErr
	}
	if len(missing) > 0 {
		return devices, errors.Errorf("%d %s cards on the PCI bus are not described by the tool, reported unhealthy: %s",
			len(missing), b.Vendor.DisplayName, strings.Join(missing, ", "))
	}
	return devices, nil
}

// merge pairs the bus's functions with the tool's cards, by PCI address where the tool prints one and by
// order otherwise. It returns the devices and the addresses the tool did not describe.
func (b *Backend) merge(bus []pcisysfs.Device, cards []Card) ([]providers.Device, []string) {
	taken := map[string]bool{}
	byAddress := map[string]bool{}
	for _, f := range bus {
		byAddress[NormalizeBusID(f.Address)] = true
	}
	var unplaced []Card
	var placed []Card
	for _, c := range cards {
		a := NormalizeBusID(c.BusID)
		if a != "" && byAddress[a] && !taken[a] {
			taken[a] = true
			c.BusID = a
			placed = append(placed, c)
			continue
		}
		unplaced = append(unplaced, c)
	}
	var missing []string
	var unknown []Card
	for _, f := range bus {
		a := NormalizeBusID(f.Address)
		if taken[a] {
			continue
		}
		if len(unplaced) > 0 {
			c := unplaced[0]
			unplaced, c.BusID = unplaced[1:], a
			placed = append(placed, c)
			continue
		}
		missing = append(missing, a)
		unknown = append(unknown, Card{BusID: a, Device: Undescribed(b.Vendor, f)})
	}
	// Cards the tool lists beyond what the bus shows (a bus filtered by class, say) are kept.
	placed = append(placed, unplaced...)
	return b.finish(placed, unknown), missing
}

// finish stamps the manufacturer, gives the cards the tool did not describe the next free indexes, and sorts
// by index.
func (b *Backend) finish(cards, unknown []Card) []providers.Device {
	used := map[int32]bool{}
	var out []providers.Device
	for _, c := range cards {
		used[c.Index] = true
		out = append(out, c.Device)
	}
	next := int32(0)
	for _, c := range unknown {
		for used[next] {
			next++
		}
		c.Index, used[next] = next, true
		out = append(out, c.Device)
	}
	for i := range out {
		out[i].Manufacturer = b.Vendor.Key
		if out[i].UUID == "" {
			out[i].UUID = fmt.Sprintf("%s-%d", b.Vendor.Key, out[i].Index)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// Undescribed is a card the bus shows and no tool or library could describe: unhealthy, named after the vendor
// and the PCI device ID, identified by its address.
func Undescribed(v vendors.Vendor, f pcisysfs.Device) providers.Device {
	return providers.Device{
		Manufacturer: v.Key,
		Product:      fmt.Sprintf("%s %s", v.DisplayName, f.DeviceID),
		UUID:         fmt.Sprintf("%s-pci-%s", v.Key, NormalizeBusID(f.Address)),
		Unhealthy:    true,
	}
}

// NormalizeBusID writes a PCI address the way sysfs names it: a four-digit domain, lowercase
// (00000000:C1:00.0 -> 0000:c1:00.0). It returns "" for something that is not an address.
func NormalizeBusID(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	parts := strings.Split(s, ":")
	if len(parts) == 2 {
		parts = append([]string{"0"}, parts...)
	}
	if len(parts) != 3 || len(parts[1]) == 0 || len(parts[1]) > 2 {
		return ""
	}
	domain, err := strconv.ParseUint(parts[0], 16, 32)
	if err != nil || domain > 0xffff {
		return ""
	}
	bus, err := strconv.ParseUint(parts[1], 16, 8)
	if err != nil {
		return ""
	}
	devFn := strings.Split(parts[2], ".")
	if len(devFn) != 2 {
		return ""
	}
	dev, err1 := strconv.ParseUint(devFn[0], 16, 8)
	fn, err2 := strconv.ParseUint(devFn[1], 16, 8)
	if err1 != nil || err2 != nil || dev > 0x1f || fn > 7 {
		return ""
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", domain, bus, dev, fn)
}
