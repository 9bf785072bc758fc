package pools

import (
	"strings"
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

func TestClaimSpecClaims(t *testing.T) {
	exactly := func(name, class string, mode resourceapi.DeviceAllocationMode, count int64) resourceapi.DeviceRequest {
		return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: mode, Count: count}}
	}
	spec := func(requests ...resourceapi.DeviceRequest) resourceapi.ResourceClaimSpec {
		return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: requests}}
	}
	whole := func(request, vendor string, cards int64) Claim {
		return Claim{Key: "ns/pod/gpu/" + request, Manufacturer: vendor, Demand: Demand{Family: FamilyExclusive, Cards: cards}}
	}
	type want struct {
		claims []Claim
		err    string
	}
	cases := map[string]struct {
		reason string
		spec   resourceapi.ResourceClaimSpec
		want   want
	}{
		"OneCard": {
			reason: "A request of a vendor's class without a count asks for one of its whole cards.",
			spec:   spec(exactly("card", "gpustack-nvidia", "", 0)),
			want:   want{claims: []Claim{whole("card", "nvidia", 1)}},
		},
		"Counted": {
			reason: "Each request of the project's classes is one claim of its count of cards; another class's is not counted.",
			spec: spec(exactly("cards", "gpustack-nvidia", resourceapi.DeviceAllocationModeExactCount, 2),
				exactly("nic", "rdma.example.com", "", 1), exactly("mlu", "gpustack-cambricon", "", 1)),
			want: want{claims: []Claim{whole("cards", "nvidia", 2), whole("mlu", "cambricon", 1)}},
		},
		"Selectors": {
			reason: "A request's CEL selectors go with its claim, each card it takes to match them all.",
			spec: spec(resourceapi.DeviceRequest{Name: "big", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpustack-nvidia",
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.capacity["nvidia.gpustack.ai"].memory >= quantity("40Gi")`}},
					{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["nvidia.gpustack.ai"].family == "Ampere"`}}}}}),
			want: want{claims: []Claim{{Key: "ns/pod/gpu/big", Manufacturer: "nvidia", Demand: Demand{Family: FamilyExclusive, Cards: 1},
				Selectors: []string{`device.capacity["nvidia.gpustack.ai"].memory >= quantity("40Gi")`, `device.attributes["nvidia.gpustack.ai"].family == "Ampere"`}}}},
		},
		"All": {
			reason: "All the devices of a class is no number of cards the check can place.",
			spec:   spec(exactly("every", "gpustack-nvidia", resourceapi.DeviceAllocationModeAll, 0)),
			want:   want{err: "request every asks for all the devices of DeviceClass gpustack-nvidia"},
		},
		"Alternatives": {
			reason: "Alternatives of which one is a card of the project's are not counted, and say so.",
			spec: spec(resourceapi.DeviceRequest{Name: "any", FirstAvailable: []resourceapi.DeviceSubRequest{
				{Name: "big", DeviceClassName: "gpu.example.com"}, {Name: "ours", DeviceClassName: "gpustack-amd"}}}),
			want: want{err: "request any offers alternatives (firstAvailable), one of them of DeviceClass gpustack-amd"},
		},
		"OtherAlternatives": {
			reason: "Alternatives of other classes ask for no card of the project's.",
			spec: spec(resourceapi.DeviceRequest{Name: "any", FirstAvailable: []resourceapi.DeviceSubRequest{
				{Name: "big", DeviceClassName: "gpu.example.com"}}}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			claims, err := ClaimSpecClaims("ns/pod/gpu", tc.spec)
			got := want{claims: claims}
			if err != nil {
				got.err = err.Error()
			}
			if tc.want.err != "" && strings.HasPrefix(got.err, tc.want.err) {
				got.err = tc.want.err
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nClaimSpecClaims(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
