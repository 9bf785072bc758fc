package pools

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	resourceapi "k8s.io/api/resource/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/vendors"
)

// draDevicePrefix begins a card's device name in its driver's ResourceSlices: card-<index>.
const draDevicePrefix = "card-"

// DRADevice names a card's device in its vendor's DRA driver's ResourceSlices after its index on the node
// (card-0), as the vendors' own drivers name theirs.
func DRADevice(index int32) string {
	if index >= 0 && int(index) < len(draDeviceNames) {
		return draDeviceNames[index]
	}
	return draDevicePrefix + strconv.Itoa(int(index))
}

// draDeviceNames are the names of the first cards' devices, made once: the per-card check names the devices of
// every card it tries for a request with selectors.
var draDeviceNames = func() []string {
	out := make([]string, 64)
	for i := range out {
		out[i] = draDevicePrefix + strconv.Itoa(i)
	}
	return out
}()

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

// ClaimSpecClaims returns what a ResourceClaim made from spec will ask of a node's cards, before it is
// allocated: each request of one of this project's DeviceClasses (vendors.DRADeviceClass) as an exclusive claim
// of its count of the vendor's whole cards, keyed by key and the request's name, with the request's CEL
// selectors, which each card it takes must match (the class's own select the vendor's driver, which the
// manufacturer says). A request of another class asks for no card of this project's and is left out. A request
// the check cannot count, all the devices of a class or alternatives one of which names one of the classes, is
// an error naming it.
func ClaimSpecClaims(key string, spec resourceapi.ResourceClaimSpec) ([]Claim, error) {
	var out []Claim
	for _, r := range spec.Devices.Requests {
		for _, sub := range r.FirstAvailable {
			if _, ours := vendors.DRADeviceClassVendor(sub.DeviceClassName); ours {
				return nil, errors.Errorf("request %s offers alternatives (firstAvailable), one of them of DeviceClass %s: "+
					"the per-card check counts only exact requests of this project's classes", r.Name, sub.DeviceClassName)
			}
		}
		if r.Exactly == nil {
			continue
		}
		v, ours := vendors.DRADeviceClassVendor(r.Exactly.DeviceClassName)
		if !ours {
			continue
		}
		if r.Exactly.AllocationMode == resourceapi.DeviceAllocationModeAll {
			return nil, errors.Errorf("request %s asks for all the devices of DeviceClass %s: the per-card check counts only a number of cards",
				r.Name, r.Exactly.DeviceClassName)
		}
		count := r.Exactly.Count
		if count == 0 {
			count = 1 // the API's default for ExactCount
		}
		var selectors []string
		for _, sel := range r.Exactly.Selectors {
			if sel.CEL != nil {
				selectors = append(selectors, sel.CEL.Expression)
			}
		}
		out = append(out, Claim{Key: key + "/" + r.Name, Manufacturer: v.Key, Demand: Demand{Family: FamilyExclusive, Cards: count},
			Selectors: selectors})
	}
	return out, nil
}
