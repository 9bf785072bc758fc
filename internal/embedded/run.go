// Package embedded runs the composition functions in-process and turns their answers into objects to apply.
// The embedded composer and `plan` share it. In-process the functions' Compose is called with typed values:
// the same code RunFunction runs for Crossplane, without the protocol's encoding (TestTypedPathMatchesProtocol
// proves both give the same objects and status). The requests Crossplane would send are built here too.
package embedded

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
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

// Flavors runs the flavors function on an inventory.
func Flavors(_ context.Context, spec xrs.NodeInventorySpec) (Output, xrs.NodeInventoryStatus, error) {
	c := flavors.Compose(spec)
	out := Output{}
	for _, w := range c.Warnings {
		out.Warnings = append(out.Warnings, w.Error())
	}
	objects, err := objectsOf(c.Names(), c.Objects)
	out.Objects = objects
	return out, c.Status, err
}

// FlavorsRequest is the flavors function's request for an inventory (see xrs.Inventory: node identities
// grouped into classes, so the request stays small at thousands of nodes).
func FlavorsRequest(spec xrs.NodeInventorySpec) (*fnv1.RunFunctionRequest, error) {
	return request(xrs.KindNodeInventory, "cluster", spec)
}

// InstanceType runs the instancetype function on one pool.
func InstanceType(_ context.Context, spec xrs.InstanceTypePoolSpec) (Output, workerv1.InstanceTypeStatus, error) {
	c, err := instancetype.Compose(spec)
	if err != nil {
		return Output{}, workerv1.InstanceTypeStatus{}, err
	}
	objects, err := objectsOf(c.Names(), c.Objects)
	return Output{Objects: objects}, c.Status, err
}

// objectsOf converts the composed objects, in the order of names, as the functions' responses carry them.
func objectsOf(names []string, objects map[string]runtime.Object) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(names))
	for _, n := range names {
		cd, err := xrs.Composed(objects[n])
		if err != nil {
			return nil, errors.Wrapf(err, "cannot convert %s to a composed resource", n)
		}
		out = append(out, &unstructured.Unstructured{Object: cd.Object})
	}
	return out, nil
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
