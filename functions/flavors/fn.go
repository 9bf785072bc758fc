// Package flavors is the composition function that turns the cluster's node inventory into the finest-grain
// Kueue ResourceFlavors, the InstanceTypeFlavor catalog and, while derivation is on, the derived InstanceTypes.
package flavors

import (
	"context"
	"fmt"
	"sort"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gpustack/gpustack-operator/functions/xrs"
	"github.com/gpustack/gpustack-operator/pools"
)

// Function is the flavors composition function.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer
}

// RunFunction composes the flavors, the catalog and the derived InstanceTypes of an XNodeInventory.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, response.DefaultTTL)

	xr, err := request.GetObservedCompositeResource(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get observed composite resource"))
		return rsp, nil
	}
	in := &xrs.NodeInventorySpec{}
	if err := xr.Resource.GetValueInto("spec", in); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot read the node inventory from spec"))
		return rsp, nil
	}
	c := Compose(*in)
	for _, w := range c.Warnings {
		response.Warning(rsp, w)
	}

	desired, err := request.GetDesiredComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get desired composed resources"))
		return rsp, nil
	}
	for _, name := range c.Names() {
		cd, err := xrs.Composed(c.Objects[name])
		if err != nil {
			response.Fatal(rsp, errors.Wrapf(err, "cannot convert %s to a composed resource", name))
			return rsp, nil
		}
		desired[resource.Name(name)] = &resource.DesiredComposed{Resource: cd, Ready: resource.ReadyTrue}
	}
	if err := response.SetDesiredComposedResources(rsp, desired); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set desired composed resources"))
		return rsp, nil
	}

	dxr, err := request.GetDesiredCompositeResource(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get desired composite resource"))
		return rsp, nil
	}
	if err := dxr.Resource.SetValue("status", c.Status); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set the composite's status"))
		return rsp, nil
	}
	if err := response.SetDesiredCompositeResource(rsp, dxr); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set desired composite resource"))
		return rsp, nil
	}
	response.Normalf(rsp, "composed %d flavors and %d catalog entries from %d nodes", len(c.Status.Flavors), len(c.Status.Catalog), c.Nodes)
	return rsp, nil
}

// Composition is what the function composes from an inventory, before any encoding: the embedded composer
// takes it as it is, RunFunction encodes it for Crossplane.
type Composition struct {
	// Objects are the composed resources by their resource name in the response.
	Objects map[string]runtime.Object
	// Status is the composite's status: the flavors and the catalog.
	Status xrs.NodeInventoryStatus
	// Warnings name the nodes left out.
	Warnings []error
	// Nodes is the number of nodes composed.
	Nodes int
}

// Names returns the objects' resource names, sorted.
func (c Composition) Names() []string { return xrs.SortedNames(c.Objects) }

// Compose turns an inventory into the flavors, the catalog entries and, while derivation is on, the derived
// InstanceTypes.
func Compose(in xrs.NodeInventorySpec) Composition {
	c := Composition{Objects: map[string]runtime.Object{}}
	nodes := validNodes(&c, pools.Expand(in.Classes))
	c.Nodes = len(nodes)

	flavors := pools.Flavors(nodes, in.Settings.MixedOnNode)
	catalog := pools.Catalog(flavors, in.Settings.AwareCPUManufacturer)
	for _, fl := range flavors {
		c.Objects["resourceflavor-"+fl.Name] = ResourceFlavor(fl)
	}
	entries := map[string]pools.CatalogEntry{}
	for _, e := range catalog {
		entries[e.Name] = e
		c.Objects["instancetypeflavor-"+e.Name] = InstanceTypeFlavor(e)
	}
	if in.Settings.DerivedFromNode {
		for _, p := range pools.DerivedPools(catalog) {
			e := entries[pools.CatalogName(catalogGeneral(p, in.Settings.AwareCPUManufacturer), p.AcceleratorGroup)]
			c.Objects["instancetype-"+p.Name()] = DerivedInstanceType(p, e)
		}
	}
	c.Status = xrs.NodeInventoryStatus{Flavors: flavors, Catalog: catalog}
	return c
}

// catalogGeneral is the general group of the catalog entry a pool comes from: the pool's own while CPU
// awareness is on; generic for a CPU pool and none for an accelerated pool while it is off.
func catalogGeneral(p pools.Pool, aware bool) string {
	if aware || p.AcceleratorGroup == "" {
		return p.GeneralGroup
	}
	return ""
}

// validNodes drops the nodes the function cannot place, each with a warning naming it, so one bad node never
// stops the rest of the cluster's pools from being composed.
func validNodes(c *Composition, in []pools.Node) []pools.Node {
	out := make([]pools.Node, 0, len(in))
	seen := map[string]bool{}
	for _, n := range in {
		var problem string
		switch {
		case n.Name == "":
			problem = "a node has no name"
		case seen[n.Name]:
			problem = fmt.Sprintf("node %s is listed twice", n.Name)
		case n.OS == "" || n.Arch == "":
			problem = fmt.Sprintf("node %s has no os or arch", n.Name)
		case n.CPU.Key == "" || n.CPU.Cores < 0:
			problem = fmt.Sprintf("node %s has no CPU key or negative cores", n.Name)
		}
		for _, g := range n.Groups {
			if problem == "" && (g.Key == "" || g.Manufacturer == "" || g.Count < 0) {
				problem = fmt.Sprintf("node %s has an accelerator group without key or manufacturer, or a negative count", n.Name)
			}
		}
		if problem != "" {
			c.Warnings = append(c.Warnings, errors.New(problem+"; it is left out of every pool"))
			continue
		}
		seen[n.Name] = true
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
