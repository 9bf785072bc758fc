package pools

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/vendors"
)

// draDevicePrefix begins a card's device name in its driver's ResourceSlices: card-<index>.
const draDevicePrefix = "card-"

// DRADevice names a card's device in its vendor's DRA driver's ResourceSlices after its index on the node
// (card-0), as the vendors' own drivers name theirs.
func DRADevice(index int32) string { return draDevicePrefix + strconv.Itoa(int(index)) }

// ResourceClaimClaims returns what an allocated ResourceClaim holds on a node's cards: for each vendor, the
// cards this project's DRA drivers allocated it from the node's pool (named after the node), as one placed,
// exclusive claim. A device the node's inventory does not know is kept by name, so the ledger reports the claim
// as one whose cards are gone instead of dropping it. A claim not allocated, or allocated elsewhere, holds
// nothing here.
func ResourceClaimClaims(rc *resourceapi.ResourceClaim, d *workerv1.Devices) []Claim {
	if rc.Status.Allocation == nil {
		return nil
	}
	byVendor := map[string][]string{}
	for _, r := range rc.Status.Allocation.Devices.Results {
		v, ok := vendors.DRADriverVendor(r.Driver)
		if !ok || r.Pool != d.Name {
			continue
		}
		byVendor[v.Key] = append(byVendor[v.Key], cardOfDevice(d, v.Key, r.Device))
	}
	name := rc.Namespace + "/" + rc.Name
	var out []Claim
	for _, vendor := range slices.Sorted(maps.Keys(byVendor)) {
		cards := slices.Compact(slices.Sorted(slices.Values(byVendor[vendor])))
		out = append(out, Claim{Key: "ResourceClaim " + name, Manufacturer: vendor, ResourceClaim: name,
			Demand: Demand{Family: FamilyExclusive, Cards: int64(len(cards))}, Cards: cards})
	}
	return out
}

// cardOfDevice returns the ID of the vendor's card a device names, or the device's name where the inventory
// has no such card.
func cardOfDevice(d *workerv1.Devices, vendor, device string) string {
	index, err := strconv.Atoi(strings.TrimPrefix(device, draDevicePrefix))
	if err != nil || !strings.HasPrefix(device, draDevicePrefix) {
		return device
	}
	for _, g := range d.Spec.Groups {
		if g.Manufacturer != vendor {
			continue
		}
		for _, a := range g.Accelerators {
			if int(a.Index) == index {
				return a.ID
			}
		}
	}
	return device
}
