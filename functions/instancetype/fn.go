// Package instancetype is the composition function that turns one InstanceType, with the flavors and
// ledgers of its pool, into its isolated ClusterQueue, an entrance LocalQueue in every user namespace, and
// the InstanceType's status: phase, entrance and the four capacity views.
package instancetype

import (
	"context"
	"sort"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"
	"k8s.io/apimachinery/pkg/runtime"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"

	"github.com/gpustack/gpustack-operator/functions/xrs"
	"github.com/gpustack/gpustack-operator/pools"
)

// Function is the instancetype composition function.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer
}

// RunFunction composes the queues and the status of an XInstanceTypePool.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, response.DefaultTTL)

	xr, err := request.GetObservedCompositeResource(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get observed composite resource"))
		return rsp, nil
	}
	in := &xrs.InstanceTypePoolSpec{}
	if err := xr.Resource.GetValueInto("spec", in); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot read the pool from spec"))
		return rsp, nil
	}
	c, err := Compose(*in)
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
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
		response.Fatal(rsp, errors.Wrap(err, "cannot set the pool's status"))
		return rsp, nil
	}
	if err := response.SetDesiredCompositeResource(rsp, dxr); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set desired composite resource"))
		return rsp, nil
	}
	return rsp, nil
}

// Composition is what the function composes for one pool, before any encoding: the embedded composer takes
// it as it is, RunFunction encodes it for Crossplane.
type Composition struct {
	// Objects are the ClusterQueue and the LocalQueues by their resource name in the response.
	Objects map[string]runtime.Object
	// Status is the InstanceType's status.
	Status workerv1.InstanceTypeStatus
}

// Names returns the objects' resource names, sorted.
func (c Composition) Names() []string { return xrs.SortedNames(c.Objects) }

// Compose turns one pool into its ClusterQueue, a LocalQueue per namespace and the InstanceType's status. A
// pool without a name, or an accelerated one whose group names no manufacturer, is an error naming the field.
func Compose(in xrs.InstanceTypePoolSpec) (Composition, error) {
	return ComposeWithViews(in, Views(&in))
}

// ComposeWithViews is Compose for a pool whose views were already projected from its nodes (Views); in.Nodes is
// not read. The embedded composer keeps each pool's views between recomputes and projects them again only when
// one of the pool's nodes changed.
func ComposeWithViews(in xrs.InstanceTypePoolSpec, v pools.Views) (Composition, error) {
	if in.Name == "" {
		return Composition{}, errors.New("spec.name: the InstanceType's name is required")
	}
	if in.Type.Acceleratable && pools.ManufacturerOf(in.Type.AcceleratorGroup) == "" {
		return Composition{}, errors.Errorf("InstanceType %s: spec.acceleratorGroup %q names no known manufacturer", in.Name, in.Type.AcceleratorGroup)
	}
	c := Composition{Objects: map[string]runtime.Object{"clusterqueue": ClusterQueue(&in)}, Status: statusWith(&in, v)}
	for _, ns := range in.Namespaces {
		c.Objects["localqueue-"+ns] = LocalQueue(in.Name, ns)
	}
	return c, nil
}

// ReadsClock reports whether the composition of in depends on in.Now: only a pool with no flavor left measures
// its drain grace period against it.
func ReadsClock(in *xrs.InstanceTypePoolSpec) bool { return !hasFlavor(in) }

func sortedProfiles(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
