package pools

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

func TestResourceClaimClaims(t *testing.T) {
	node := twoA10G()
	node.Name = "node-a"
	node.Spec.Groups = append(node.Spec.Groups, workerv1.DeviceGroup{ID: "m", Manufacturer: "cambricon",
		Accelerators: []workerv1.Accelerator{{ID: "MLU-0", Index: 0}}})
	result := func(driver, pool, device string) resourceapi.DeviceRequestAllocationResult {
		return resourceapi.DeviceRequestAllocationResult{Request: "r", Driver: driver, Pool: pool, Device: device}
	}
	claim := func(results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
		rc := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rc"}}
		if results != nil {
			rc.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}
		}
		return rc
	}
	whole := func(vendor string, cards ...string) Claim {
		return Claim{Key: "ResourceClaim ns/rc", Manufacturer: vendor, ResourceClaim: "ns/rc",
			Demand: Demand{Family: FamilyExclusive, Cards: int64(len(cards))}, Cards: cards}
	}
	cases := map[string]struct {
		reason string
		claim  *resourceapi.ResourceClaim
		want   []Claim
	}{
		"NotAllocated": {
			reason: "A claim the scheduler has not allocated yet holds nothing.",
			claim:  claim(),
		},
		"CardsByIndex": {
			reason: "Each device names its card by index; one claim per vendor, its cards sorted.",
			claim: claim(result("nvidia.gpustack.ai", "node-a", "card-1"), result("nvidia.gpustack.ai", "node-a", "card-0"),
				result("cambricon.gpustack.ai", "node-a", "card-0")),
			want: []Claim{whole("cambricon", "MLU-0"), whole("nvidia", "A", "B")},
		},
		"OthersLeftOut": {
			reason: "Devices of another node's pool or of another project's driver are not this node's to count.",
			claim: claim(result("nvidia.gpustack.ai", "node-b", "card-0"), result("gpu.nvidia.com", "node-a", "gpu-0"),
				result("nvidia.gpustack.ai", "node-a", "card-1")),
			want: []Claim{whole("nvidia", "B")},
		},
		"UnknownDeviceKeptByName": {
			reason: "A device the inventory does not know is kept by name, so the ledger reports the claim's card gone.",
			claim:  claim(result("nvidia.gpustack.ai", "node-a", "card-9")),
			want:   []Claim{whole("nvidia", "card-9")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ResourceClaimClaims(tc.claim, node)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nResourceClaimClaims(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
