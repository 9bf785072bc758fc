// Package compose runs the composition functions in-process, with the same request and response types
// Crossplane uses, and turns their answers into objects to apply. The embedded composer and `plan` share it.
package compose

import (
	"context"
	"sort"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/functions/flavors"
	"github.com/gpustack/gpustack-operator/functions/instancetype"
	"github.com/gpustack/gpustack-operator/functions/xrs"
)

// Output is what one function call produced.
type Output struct {
	// Objects are the desired composed resources, sorted by their resource name in the response.
	Objects []*unstructured.Unstructured
	// Warnings are the function's warning results.
	Warnings []string
}

// Runner is a composition function.
type Runner interface {
	RunFunction(context.Context, *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error)
}

// Flavors runs the flavors function on an inventory.
func Flavors(ctx context.Context, spec xrs.NodeInventorySpec) (Output, xrs.NodeInventoryStatus, error) {
	var status xrs.NodeInventoryStatus
	out, err := run(ctx, &flavors.Function{}, xrs.KindNodeInventory, "cluster", spec, &status)
	return out, status, err
}

// InstanceType runs the instancetype function on one pool.
func InstanceType(ctx context.Context, spec xrs.InstanceTypePoolSpec) (Output, workerv1.InstanceTypeStatus, error) {
	var status workerv1.InstanceTypeStatus
	out, err := run(ctx, &instancetype.Function{}, xrs.KindInstanceTypePool, spec.Name, spec, &status)
	return out, status, err
}

// run calls fn with a composite of the kind whose spec is spec, and decodes the desired composite's status
// into status.
func run(ctx context.Context, fn Runner, kind, name string, spec, status any) (Output, error) {
	xr := &unstructured.Unstructured{Object: map[string]any{}}
	xr.SetAPIVersion(xrs.APIVersion)
	xr.SetKind(kind)
	xr.SetName(name)
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&struct {
		Spec any `json:"spec"`
	}{spec})
	if err != nil {
		return Output{}, errors.Wrap(err, "cannot encode the composite's spec")
	}
	xr.Object["spec"] = content["spec"]
	s, err := structpb.NewStruct(xr.Object)
	if err != nil {
		return Output{}, errors.Wrap(err, "cannot encode the composite")
	}
	req := &fnv1.RunFunctionRequest{
		Meta:     &fnv1.RequestMeta{Tag: name},
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: s}},
		Desired:  &fnv1.State{Composite: &fnv1.Resource{Resource: s}},
	}
	rsp, err := fn.RunFunction(ctx, req)
	if err != nil {
		return Output{}, errors.Wrap(err, "function failed")
	}
	var out Output
	for _, r := range rsp.GetResults() {
		switch r.GetSeverity() {
		case fnv1.Severity_SEVERITY_FATAL:
			return out, errors.New(r.GetMessage())
		case fnv1.Severity_SEVERITY_WARNING:
			out.Warnings = append(out.Warnings, r.GetMessage())
		}
	}
	names := make([]string, 0, len(rsp.GetDesired().GetResources()))
	for n := range rsp.GetDesired().GetResources() {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		u := &unstructured.Unstructured{}
		if err := resource.AsObject(rsp.GetDesired().GetResources()[n].GetResource(), u); err != nil {
			return out, errors.Wrapf(err, "cannot decode desired resource %s", n)
		}
		out.Objects = append(out.Objects, u)
	}
	if st, ok := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"]; ok && status != nil {
		m, _ := st.(map[string]any)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, status); err != nil {
			return out, errors.Wrap(err, "cannot decode the composite's status")
		}
	}
	return out, nil
}
