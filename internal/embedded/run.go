// Package embedded runs the composition functions in-process, with the same request and response types
// Crossplane uses, and turns their answers into objects to apply. The embedded composer and `plan` share it.
package embedded

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
	req, err := FlavorsRequest(spec)
	if err != nil {
		return Output{}, status, err
	}
	out, err := run(ctx, &flavors.Function{}, req, &status)
	return out, status, err
}

// FlavorsRequest is the flavors function's request for an inventory (see xrs.Inventory: node identities
// grouped into classes, so the request stays small at thousands of nodes).
func FlavorsRequest(spec xrs.NodeInventorySpec) (*fnv1.RunFunctionRequest, error) {
	return request(xrs.KindNodeInventory, "cluster", spec)
}

// InstanceType runs the instancetype function on one pool.
func InstanceType(ctx context.Context, spec xrs.InstanceTypePoolSpec) (Output, workerv1.InstanceTypeStatus, error) {
	var status workerv1.InstanceTypeStatus
	req, err := InstanceTypeRequest(spec)
	if err != nil {
		return Output{}, status, err
	}
	out, err := run(ctx, &instancetype.Function{}, req, &status)
	return out, status, err
}

// InstanceTypeRequest is the instancetype function's request for one pool.
func InstanceTypeRequest(spec xrs.InstanceTypePoolSpec) (*fnv1.RunFunctionRequest, error) {
	return request(xrs.KindInstanceTypePool, spec.Name, spec)
}

// Composite returns the composite resource of the kind whose spec is spec, as the functions read it and as a
// Crossplane cluster would store it.
func Composite(kind, name string, spec any) (map[string]any, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&struct {
		Spec any `json:"spec"`
	}{spec})
	if err != nil {
		return nil, errors.Wrap(err, "cannot encode the composite's spec")
	}
	return map[string]any{"apiVersion": xrs.APIVersion, "kind": kind, "metadata": map[string]any{"name": name},
		"spec": content["spec"]}, nil
}

// request returns a function request whose observed composite is of the kind, with spec.
func request(kind, name string, spec any) (*fnv1.RunFunctionRequest, error) {
	xr, err := Composite(kind, name, spec)
	if err != nil {
		return nil, err
	}
	s, err := structpb.NewStruct(xr)
	if err != nil {
		return nil, errors.Wrap(err, "cannot encode the composite")
	}
	// As Crossplane does, the desired composite starts with the identity only; the function adds status.
	desired, err := structpb.NewStruct(map[string]any{"apiVersion": xrs.APIVersion, "kind": kind,
		"metadata": map[string]any{"name": name}})
	if err != nil {
		return nil, errors.Wrap(err, "cannot encode the desired composite")
	}
	return &fnv1.RunFunctionRequest{
		Meta:     &fnv1.RequestMeta{Tag: name},
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: s}},
		Desired:  &fnv1.State{Composite: &fnv1.Resource{Resource: desired}},
	}, nil
}

// run calls fn and decodes the desired composite's status into status.
func run(ctx context.Context, fn Runner, req *fnv1.RunFunctionRequest, status any) (Output, error) {
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
