package embedded

import (
	"context"
	"sort"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/functions/flavors"
	"github.com/gpustack/gpustack-operator/functions/instancetype"
	"github.com/gpustack/gpustack-operator/functions/xrs"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// overProtocol runs a function as Crossplane does, through its RunFunction request and response, and decodes
// the answer as Flavors and InstanceType return it.
func overProtocol(ctx context.Context, fn interface {
	RunFunction(context.Context, *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error)
}, req *fnv1.RunFunctionRequest, status any) (Output, error) {
	rsp, err := fn.RunFunction(ctx, req)
	if err != nil {
		return Output{}, err
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
			return out, err
		}
		out.Objects = append(out.Objects, u)
	}
	st, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
	return out, runtime.DefaultUnstructuredConverter.FromUnstructured(st, status)
}

// TestTypedPathMatchesProtocol: the embedded composer calls the functions' Compose with typed values; Crossplane
// calls RunFunction. Both must compose the same objects, status and warnings, on the walkthrough, on the MIG
// cluster, on a node the function must leave out, and on a thousand generated busy nodes.
func TestTypedPathMatchesProtocol(t *testing.T) {
	ctx := context.Background()
	load := func(file string) []pools.Node {
		inv, err := simulated.Load(testenv.Path("examples", "clusters", file))
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := simulated.Nodes(ctx, inv)
		if err != nil {
			t.Fatal(err)
		}
		return nodes
	}
	broken := append(load("walkthrough.yaml"), pools.Node{Name: "no-arch", OS: "linux", CPU: pools.CPU{Key: "generic"}})
	for name, nodes := range map[string][]pools.Node{
		"walkthrough": load("walkthrough.yaml"), "mig": load("h100-mig.yaml"), "broken": broken, "busy": busy(1000),
	} {
		t.Run(name, func(t *testing.T) {
			settings := xrs.DefaultFunctionSettings()
			spec := xrs.Inventory(nodes, settings)
			typed, typedStatus, err := Flavors(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			req, err := FlavorsRequest(spec)
			if err != nil {
				t.Fatal(err)
			}
			var status xrs.NodeInventoryStatus
			proto, err := overProtocol(ctx, &flavors.Function{}, req, &status)
			if err != nil {
				t.Fatal(err)
			}
			if len(typed.Objects) == 0 || name == "broken" && len(typed.Warnings) != 1 {
				t.Fatalf("Flavors(...): %d objects and warnings %v: the case composes nothing to compare", len(typed.Objects), typed.Warnings)
			}
			if diff := cmp.Diff(proto, typed, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Flavors(...): -protocol, +typed:\n%s", diff)
			}
			if diff := cmp.Diff(status, typedStatus, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Flavors(...) status: -protocol, +typed:\n%s", diff)
			}
			for _, o := range typed.Objects {
				if o.GetKind() != "InstanceType" {
					continue
				}
				it := &workerv1.InstanceType{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, it); err != nil {
					t.Fatal(err)
				}
				pool := xrs.InstanceTypePoolSpec{Name: it.Name, Type: it.Spec, Flavors: PoolFlavors(it.Spec, typedStatus.Flavors),
					Nodes: PoolNodes(it.Spec, typedStatus.Flavors, nodes), Namespaces: []string{"team-b", "default"}, Settings: settings}
				typed, typedStatus, err := InstanceType(ctx, pool)
				if err != nil {
					t.Fatal(err)
				}
				req, err := InstanceTypeRequest(pool)
				if err != nil {
					t.Fatal(err)
				}
				var status workerv1.InstanceTypeStatus
				proto, err := overProtocol(ctx, &instancetype.Function{}, req, &status)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(proto, typed, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("InstanceType(%s): -protocol, +typed:\n%s", it.Name, diff)
				}
				if diff := cmp.Diff(status, typedStatus, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("InstanceType(%s) status: -protocol, +typed:\n%s", it.Name, diff)
				}
			}
		})
	}
}
