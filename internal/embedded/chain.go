package embedded

import (
	"context"
	"reflect"
	"sort"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/functions/instancetype"
	"github.com/gpustack/gpustack-operator/functions/xrs"
	"github.com/gpustack/gpustack-operator/pools"
)

// Chain is what the embedded composer keeps between recomputes: the nodes as last profiled, the flavors
// function's last answer, and each pool's flavors, nodes, views and composition. A recompute after a few nodes
// changed redoes only what those nodes feed: the flavors function runs again only when a node's identity (its
// labels, not its ledger or CPU usage) changed, a pool's views are projected again only when one of its nodes
// changed, and a pool is composed again only when its views or its own inputs changed. A new Chain computes
// everything: the full recompute, which the tests hold every updated Chain to.
//
// A recompute is Set and Remove for the nodes that changed, Flavors, InstanceType for every pool, then Commit.
// What it returns is shared with the Chain: callers must not modify it. A Chain is not safe for concurrent use.
type Chain struct {
	nodes    map[string]pools.Node
	settings xrs.FunctionSettings
	// flavors is the flavors function's last answer, nil before the first; flavorsStale is set when a node
	// came, went or changed its identity since, and flavorsGen counts the answers that differed.
	flavors      *flavorsAnswer
	flavorsStale bool
	flavorsGen   uint64
	// dirty are the nodes set or removed since the last Commit; composed the pools composed since.
	dirty    map[string]bool
	composed map[string]bool
	pools    map[string]*poolState
}

// flavorsAnswer is one answer of the flavors function.
type flavorsAnswer struct {
	out    Output
	status xrs.NodeInventoryStatus
}

// poolState is what the Chain keeps of one pool.
type poolState struct {
	// typ and flavorsGen are the type's spec and the flavors' generation its flavors and members were found for.
	typ        workerv1.InstanceTypeSpec
	flavorsGen uint64
	pool       pools.Pool
	flavors    []pools.Flavor
	// members are the nodes of the pool's flavors, with what the views read of them (pools.Node.ForPool).
	members map[string]pools.Node
	views   pools.Views
	// composedFor is the input of the last composition, without flavors and nodes (and without the clock where
	// the composition does not read it); valid is false until the first and after the views changed.
	composedFor xrs.InstanceTypePoolSpec
	valid       bool
	out         Output
	status      workerv1.InstanceTypeStatus
}

// NewChain returns a Chain that knows no node yet.
func NewChain() *Chain {
	return &Chain{nodes: map[string]pools.Node{}, dirty: map[string]bool{}, composed: map[string]bool{}, pools: map[string]*poolState{}}
}

// Set adds a node, or replaces the node of its name.
func (c *Chain) Set(n pools.Node) {
	old, ok := c.nodes[n.Name]
	if !ok || !reflect.DeepEqual(old.Identity(), n.Identity()) {
		c.flavorsStale = true
	}
	c.nodes[n.Name] = n
	c.dirty[n.Name] = true
}

// Remove forgets a node; a name the Chain does not know is ignored.
func (c *Chain) Remove(name string) {
	if _, ok := c.nodes[name]; !ok {
		return
	}
	delete(c.nodes, name)
	c.flavorsStale = true
	c.dirty[name] = true
}

// Flavors runs the flavors function on the Chain's nodes with settings s, or returns its last answer when no
// node's identity and no setting changed since.
func (c *Chain) Flavors(ctx context.Context, s xrs.FunctionSettings) (Output, xrs.NodeInventoryStatus, error) {
	if s != c.settings {
		c.settings, c.flavorsStale = s, true
	}
	if c.flavors != nil && !c.flavorsStale {
		return c.flavors.out, c.flavors.status, nil
	}
	names := make([]string, 0, len(c.nodes))
	for name := range c.nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	nodes := make([]pools.Node, len(names))
	for i, name := range names {
		nodes[i] = c.nodes[name]
	}
	out, status, err := Flavors(ctx, xrs.Inventory(nodes, s))
	if err != nil {
		return Output{}, xrs.NodeInventoryStatus{}, err
	}
	if c.flavors == nil || !reflect.DeepEqual(c.flavors.status, status) {
		// The pools find their flavors and members again; nothing else a pool keeps depends on the answer.
		c.flavorsGen++
	}
	c.flavors, c.flavorsStale = &flavorsAnswer{out: out, status: status}, false
	return out, status, nil
}

// InstanceType runs the instancetype function on one pool, as embedded.InstanceType does, or returns the
// pool's last composition when neither its nodes nor its own inputs changed since. The Chain sets the spec's
// Flavors to the pool's (the caller may read them, for instancetype.DrainAt say) and ignores its Nodes: the pool's
// nodes are the Chain's. Flavors comes first.
func (c *Chain) InstanceType(_ context.Context, spec *xrs.InstanceTypePoolSpec) (Output, workerv1.InstanceTypeStatus, error) {
	if c.flavors == nil || c.flavorsStale {
		return Output{}, workerv1.InstanceTypeStatus{}, errors.Errorf("InstanceType %s: the flavors are not composed yet", spec.Name)
	}
	p := c.pool(spec.Name, spec.Type)
	spec.Flavors = p.flavors
	key := *spec
	key.Flavors, key.Nodes = nil, nil
	if !instancetype.ReadsClock(spec) {
		key.Now = metav1.Time{}
	}
	if !p.valid || !reflect.DeepEqual(p.composedFor, key) {
		in := *spec
		in.Nodes = nil
		comp, err := instancetype.ComposeWithViews(in, p.views)
		if err != nil {
			return Output{}, workerv1.InstanceTypeStatus{}, err
		}
		objects, err := objectsOf(comp.Names(), comp.Objects)
		if err != nil {
			return Output{}, workerv1.InstanceTypeStatus{}, err
		}
		p.out, p.status, p.composedFor, p.valid = Output{Objects: objects}, comp.Status, key, true
	}
	c.composed[spec.Name] = true
	return p.out, *p.status.DeepCopy(), nil
}

// pool returns the pool of the named type brought up to date: found again when the type's spec or the flavors
// changed, its changed members read again and its views projected again when they did.
func (c *Chain) pool(name string, typ workerv1.InstanceTypeSpec) *poolState {
	p := c.pools[name]
	if p == nil || p.flavorsGen != c.flavorsGen || !reflect.DeepEqual(p.typ, typ) {
		p = c.findPool(typ)
		c.pools[name] = p
		return p
	}
	changed := false
	for n := range c.dirty {
		if _, member := p.members[n]; !member {
			continue
		}
		// A node that came or went changed the flavors, and with them every pool's members: a member is known.
		// What the views read of it may not have changed (a card taken does not change a CPU pool).
		if m := c.nodes[n].ForPool(p.pool); !reflect.DeepEqual(m, p.members[n]) {
			p.members[n], changed = m, true
		}
	}
	if changed {
		p.views, p.valid = pools.MemberViews(p.pool, p.members), false
	}
	return p
}

// findPool finds a type's flavors and members among the Chain's, and projects its views.
func (c *Chain) findPool(typ workerv1.InstanceTypeSpec) *poolState {
	p := &poolState{typ: typ, flavorsGen: c.flavorsGen, pool: instancetype.PoolOf(typ)}
	p.flavors = PoolFlavors(typ, c.flavors.status.Flavors)
	size := 0
	for _, f := range p.flavors {
		size += len(f.Nodes)
	}
	p.members = make(map[string]pools.Node, size)
	for _, f := range p.flavors {
		for _, n := range f.Nodes {
			if node, ok := c.nodes[n]; ok {
				p.members[n] = node.ForPool(p.pool)
			}
		}
	}
	p.views = pools.MemberViews(p.pool, p.members)
	return p
}

// Commit ends a recompute: every pool composed since the last Commit has taken in the nodes' changes, and a
// pool not composed (its type is gone, or failed) is forgotten, to be found again if it is asked for later.
func (c *Chain) Commit() {
	for name := range c.pools {
		if !c.composed[name] {
			delete(c.pools, name)
		}
	}
	clear(c.dirty)
	clear(c.composed)
}
