package composer

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/gpustack/gpustack-operator/internal/cachepolicy"
)

// cpuIndex sums the CPU the Pods bound to each node request, kept from the worker's cache's Pod events: a
// recompute reads the sums instead of listing every Pod of the cluster, and a Pod's event that leaves the sums
// as they were (its status, its readiness) recomputes nothing. Until its handler has been given every Pod the
// cache held at start (synced), a recompute lists the Pods as before.
type cpuIndex struct {
	mu    sync.Mutex
	pods  map[types.UID]podCPU
	nodes map[string]int64
	// synced reports whether the handler was given the cache's first list; nil before it is registered.
	synced func() bool
}

// podCPU is the CPU a Pod bound to a node requests there, in millicores.
type podCPU struct {
	node  string
	milli int64
}

// cpuOf returns the CPU a Pod holds on its node, as the scheduler counts it: its containers and native
// sidecars, or its init containers' peak when that is more, and its overhead; ok false for a Pod that is not
// bound or has finished.
func cpuOf(p *corev1.Pod) (podCPU, bool) {
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return podCPU{}, false
	}
	requests := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	return podCPU{node: p.Spec.NodeName, milli: requests.Cpu().MilliValue()}, true
}

// set records a Pod as it is now (nil: deleted) and reports whether a node's sum changed.
func (x *cpuIndex) set(uid types.UID, p *corev1.Pod) bool {
	var now podCPU
	counted := false
	if p != nil {
		now, counted = cpuOf(p)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.pods == nil {
		x.pods, x.nodes = map[types.UID]podCPU{}, map[string]int64{}
	}
	was, had := x.pods[uid]
	if had == counted && was == now {
		return false
	}
	if had {
		x.add(was.node, -was.milli)
		delete(x.pods, uid)
	}
	if counted {
		x.add(now.node, now.milli)
		x.pods[uid] = now
	}
	return was.milli != 0 || now.milli != 0
}

// add adds to a node's sum, forgetting a node whose sum is back to nothing. The caller holds mu.
func (x *cpuIndex) add(node string, milli int64) {
	if x.nodes[node] += milli; x.nodes[node] == 0 {
		delete(x.nodes, node)
	}
}

// watch makes the index answer once synced reports true: its handler was registered and given the cache's
// first list.
func (x *cpuIndex) watch(synced func() bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.synced = synced
}

// sums returns each node's sum, ok false while the index cannot answer (not fed by events, or not synced).
func (x *cpuIndex) sums() (map[string]int64, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.synced == nil || !x.synced() {
		return nil, false
	}
	out := make(map[string]int64, len(x.nodes))
	for n, m := range x.nodes {
		out[n] = m
	}
	return out, true
}

// handler returns the Pod event handler that feeds the index and calls changed after a node's sum changed.
func (x *cpuIndex) handler(changed func()) toolscache.ResourceEventHandler {
	on := func(obj any, deleted bool) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		now := p
		if deleted {
			now = nil
		}
		if x.set(p.UID, now) {
			changed()
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { on(obj, false) },
		UpdateFunc: func(_, obj any) { on(obj, false) },
		DeleteFunc: func(obj any) { on(cachepolicy.Unwrapped(obj), true) },
	}
}
