package cardcheck

import (
	"context"
	"slices"
	"strings"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpustack/gpustack-operator/internal/cachepolicy"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/vendors"
)

// A request of a ResourceClaimTemplate may narrow the cards it takes with CEL selectors over the devices'
// attributes and capacity (a product, a memory size, a driver version). The scheduler's allocator gives it only
// a card that matches; the check places it so too, reading each card's device from the ResourceSlices of the
// node's pool with the upstream CEL library, so a Workload no free card matches waits with the reason instead of
// being admitted to a Pod that never binds.

// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceslices,verbs=get;list;watch

// celCache keeps the compiled selectors: the same few expressions are evaluated for every card a verdict tries.
var celCache = cel.NewCache(256, cel.Features{EnableConsumableCapacity: true})

// deviceSelector returns what a verdict reads the cards' devices with: a node's ResourceSlices are listed once
// a verdict, the first time a card of it is asked about, and each device's verdict on a request's selectors is
// kept (r.selections) while its slice is unchanged. Nil where the worker cannot read ResourceSlices, and then a
// request's selectors are not read.
func (r *Reconciler) deviceSelector(ctx context.Context) pools.DeviceSelector {
	if !r.ResourceSlices {
		return nil
	}
	published := map[string]map[string]map[string]publishedDevice{} // node, driver, device name
	return func(node, manufacturer, device string, selectors []string) bool {
		devices, ok := published[node]
		if !ok {
			devices = r.publishedDevices(ctx, node)
			published[node] = devices
		}
		driver := vendors.DRADriver(manufacturer)
		d, ok := devices[driver][device]
		return ok && r.selections.matches(ctx, selectionKey{node: node, driver: driver, device: device,
			selectors: strings.Join(selectors, "\n")}, d, selectors)
	}
}

// publishedDevice is a device as a ResourceSlice publishes it, with the slice's resourceVersion.
type publishedDevice struct {
	resourceapi.Device
	version string
}

// publishedDevices returns the devices of the node's pool that this project's drivers publish in their latest
// generation of the pool, by driver and name; none where the cache cannot answer (the card matches no selector
// this verdict, and the Workload is judged again).
func (r *Reconciler) publishedDevices(ctx context.Context, node string) map[string]map[string]publishedDevice {
	var list resourceapi.ResourceSliceList
	if err := r.Client.List(ctx, &list, client.MatchingFields{cachepolicy.ResourceSliceNode: node}, client.UnsafeDisableDeepCopy); err != nil {
		r.Log.Error(err, "cannot list the ResourceSlices of a node; its cards match no request's selectors this verdict", "node", node)
		return nil
	}
	latest := map[string]int64{}
	for i := range list.Items {
		if s := &list.Items[i].Spec; s.Pool.Name == node {
			latest[s.Driver] = max(latest[s.Driver], s.Pool.Generation)
		}
	}
	out := map[string]map[string]publishedDevice{}
	for i := range list.Items {
		s := &list.Items[i].Spec
		if _, ours := vendors.DRADriverVendor(s.Driver); !ours || s.Pool.Name != node || s.Pool.Generation != latest[s.Driver] {
			continue
		}
		if out[s.Driver] == nil {
			out[s.Driver] = map[string]publishedDevice{}
		}
		for _, d := range s.Devices {
			out[s.Driver][d.Name] = publishedDevice{Device: d, version: list.Items[i].ResourceVersion}
		}
	}
	return out
}

// selectionMemo keeps whether a device matched a request's selectors, with the resourceVersion of the slice it
// was read from: a Workload that waits is judged again and again, and evaluating its selectors on every card of
// a large flavor each time costs far more than placing it (BenchmarkDecideSelected). An entry holds while the
// slice is the one it was evaluated on; the least recently used are forgotten past maxSelections.
type selectionMemo struct {
	once  sync.Once
	cache *lru.Cache
}

// maxSelections is how many devices' verdicts the memo keeps: every card of 8,000 nodes of eight cards, for one
// set of selectors.
const maxSelections = 1 << 16

// selectionKey names one device's verdict on one set of selectors (joined by newlines).
type selectionKey struct {
	node, driver, device, selectors string
}

type selection struct {
	version string
	match   bool
}

// matches returns whether the device matches every one of selectors, from the memo where the device's slice is
// unchanged since it was evaluated.
func (m *selectionMemo) matches(ctx context.Context, key selectionKey, d publishedDevice, selectors []string) bool {
	m.once.Do(func() { m.cache = lru.New(maxSelections) })
	if v, ok := m.cache.Get(key); ok && v.(selection).version == d.version {
		return v.(selection).match
	}
	match := matchesAll(ctx, key.driver, d.Device, selectors)
	m.cache.Add(key, selection{version: d.version, match: match})
	return match
}

// matchesAll reports whether the device matches every selector. One that does not compile or evaluate (the API
// server checked it when the template was made) matches nothing, as the scheduler's allocator treats it.
func matchesAll(ctx context.Context, driver string, d resourceapi.Device, selectors []string) bool {
	return !slices.ContainsFunc(selectors, func(expression string) bool {
		compiled := celCache.GetOrCompile(expression)
		if compiled.Error != nil {
			return true
		}
		ok, _, err := compiled.DeviceMatches(ctx, cel.Device{Driver: driver, AllowMultipleAllocations: d.AllowMultipleAllocations,
			Attributes: d.Attributes, Capacity: d.Capacity})
		return err != nil || !ok
	})
}
