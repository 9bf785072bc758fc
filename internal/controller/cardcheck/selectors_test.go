package cardcheck

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
)

// TestSelectionMemo checks that a device's verdict on a request's selectors is kept while its slice is the one
// it was evaluated on, and evaluated again once the slice changed.
func TestSelectionMemo(t *testing.T) {
	const selector = `device.attributes["nvidia.gpustack.ai"].index == 1`
	device := func(version string, index int64) publishedDevice {
		return publishedDevice{version: version, Device: resourceapi.Device{Name: "card-1",
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"index": {IntValue: ptr.To(index)}}}}
	}
	key := selectionKey{node: "a", driver: "nvidia.gpustack.ai", device: "card-1", selectors: selector}
	var memo selectionMemo
	var got []bool
	for _, d := range []publishedDevice{
		device("1", 1), // evaluated: matches
		device("1", 0), // the same slice: kept (a slice's devices do not change without a new resourceVersion)
		device("2", 0), // a new slice: evaluated again, no longer matches
		device("2", 1), // kept
	} {
		got = append(got, memo.matches(context.Background(), key, d, []string{selector}))
	}
	if diff := cmp.Diff([]bool{true, true, false, false}, got); diff != "" {
		t.Errorf("selectionMemo.matches(...) in turn: -want, +got:\n%s", diff)
	}
	if memo.matches(context.Background(), selectionKey{node: "a", driver: "nvidia.gpustack.ai", device: "card-1", selectors: "device.nope("},
		device("3", 1), []string{"device.nope("}) {
		t.Errorf("selectionMemo.matches(...) of a selector that does not compile: true, want false (the allocator matches nothing with it)")
	}
}
