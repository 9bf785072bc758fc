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
	if in.Name == "" {
		response.Fatal(rsp, errors.New("spec.name: the InstanceType's name is required"))
		return rsp, nil
	}
	if in.Type.Acceleratable && pools.ManufacturerOf(in.Type.AcceleratorGroup) == "" {
		response.Fatal(rsp, errors.Errorf("InstanceType %s: spec.acceleratorGroup %q names no known manufacturer", in.Name, in.Type.AcceleratorGroup))
		return rsp, nil
	}

	desired, err := request.GetDesiredComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get desired composed resources"))
		return rsp, nil
	}
	cq, err := xrs.Composed(ClusterQueue(in))
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot convert the ClusterQueue to a composed resource"))
		return rsp, nil
	}
	desired["clusterqueue"] = &resource.DesiredComposed{Resource: cq, Ready: resource.ReadyTrue}
	namespaces := append([]string(nil), in.Namespaces...)
	sort.Strings(namespaces)
	for _, ns := range namespaces {
		lq, err := xrs.Composed(LocalQueue(in.Name, ns))
		if err != nil {
			response.Fatal(rsp, errors.Wrapf(err, "cannot convert the LocalQueue of namespace %s to a composed resource", ns))
			return rsp, nil
		}
		desired[resource.Name("localqueue-"+ns)] = &resource.DesiredComposed{Resource: lq, Ready: resource.ReadyTrue}
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
	if err := dxr.Resource.SetValue("status", Status(in)); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set the pool's status"))
		return rsp, nil
	}
	if err := response.SetDesiredCompositeResource(rsp, dxr); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set desired composite resource"))
		return rsp, nil
	}
	return rsp, nil
}

func sortedProfiles(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
