package embedded

import (
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/functions/instancetype"
	"github.com/gpustack/gpustack-operator/pools"
)

// PoolFlavors returns the flavors of the pool: the only ones its function call needs.
func PoolFlavors(spec workerv1.InstanceTypeSpec, flavors []pools.Flavor) []pools.Flavor {
	pool := instancetype.PoolOf(spec)
	var out []pools.Flavor
	for _, f := range flavors {
		if pool.Matches(f) {
			out = append(out, f)
		}
	}
	return out
}

// PoolNodes returns the nodes of the pool's flavors with only what the views read of them (pools.Node.ForPool),
// grouped into classes: all the instancetype function needs, so a pool's request stays small.
func PoolNodes(spec workerv1.InstanceTypeSpec, flavors []pools.Flavor, nodes []pools.Node) []pools.NodeClass {
	pool := instancetype.PoolOf(spec)
	names := map[string]bool{}
	for _, f := range flavors {
		if pool.Matches(f) {
			for _, n := range f.Nodes {
				names[n] = true
			}
		}
	}
	var out []pools.Node
	for _, n := range nodes {
		if names[n.Name] {
			out = append(out, n.ForPool(pool))
		}
	}
	return pools.Classify(out)
}
