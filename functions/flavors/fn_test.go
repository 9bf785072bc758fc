package flavors

import (
	"context"
	"testing"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
)

// inventory is an XNodeInventory with the given spec, as the composer or Crossplane sends it.
func inventory(spec string) *fnv1.RunFunctionRequest {
	return &fnv1.RunFunctionRequest{Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(
		`{"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "XNodeInventory", "metadata": {"name": "cluster"}, "spec": ` +
			spec + `}`)}}}
}

// epycNode is the walkthrough's CPU node: one class of one node with 16 AMD EPYC 7R13 cores.
const epycNode = `{"names": ["node-cpu"], "identity": {"name": "", "os": "linux", "arch": "amd64", "managed": true,
	"cpu": {"key": "amd-epyc-7r13", "manufacturer": "amd", "model": "AMD EPYC 7R13 Processor", "cores": 16}}}`

// The objects the CPU node composes: its ResourceFlavor, the generic catalog entry and the derived generic pool.
const (
	epycFlavor = `{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
		"metadata": {"name": "gpustack--amd-epyc-7r13-linux-amd64-16c", "annotations": {
			"note.gpustack.ai/generalGroup": "amd-epyc-7r13", "note.gpustack.ai/cpuManufacturer": "amd",
			"note.gpustack.ai/cpuDetail": "AMD EPYC 7R13 Processor"}, "labels": {
			"feature.gpustack.ai/acceleratable": "false", "general.feature.gpustack.ai/amd-epyc-7r13": "true",
			"general.feature.gpustack.ai/amd-epyc-7r13.capacity": "16", "general.feature.gpustack.ai/amd-epyc-7r13.count": "16",
			"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "resource.gpustack.ai/type": "nodes"}},
		"spec": {"nodeLabels": {"general.feature.gpustack.ai/amd-epyc-7r13": "true",
			"general.feature.gpustack.ai/amd-epyc-7r13.count": "16", "gpustack.ai/managed": "true",
			"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}}}`
	genericEntry = `{"apiVersion": "worker.gpustack.ai/v1", "kind": "InstanceTypeFlavor", "metadata": {"name": "gpustack--generic"},
		"spec": {"acceleratable": false, "generalGroup": "generic", "manufacturer": "generic"}}`
	genericType = `{"apiVersion": "worker.gpustack.ai/v1", "kind": "InstanceType",
		"metadata": {"name": "gpustack--generic-linux-amd64", "annotations": {"gpustack.ai/compose-policy": "create-only"},
			"labels": {"feature.gpustack.ai/acceleratable": "false", "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
				"schedule.gpustack.ai/derived-from-node": "true", "schedule.gpustack.ai/queue-entrance": "gpustack-fnv64-3b93966fd73eb9ec"}},
		"spec": {"acceleratable": false, "arch": "amd64", "generalGroup": "generic", "inactive": false, "localStorage": "100Gi",
			"manufacturer": "generic", "os": "linux", "unitResources": {"cpu": "1", "ram": "2Gi"}}}`
	epycStatus = `{"status": {
		"flavors": [{"name": "gpustack--amd-epyc-7r13-linux-amd64-16c", "gKey": "amd-epyc-7r13", "os": "linux", "arch": "amd64",
			"count": 16, "nodes": ["node-cpu"], "hardware": {"cpuManufacturer": "amd", "cpuModel": "AMD EPYC 7R13 Processor"}}],
		"catalog": [{"name": "gpustack--generic", "generalGroup": "generic", "manufacturer": "generic",
			"platforms": [{"os": "linux", "arch": "amd64"}]}]}}`
)

func TestRunFunction(t *testing.T) {
	ttl := &fnv1.ResponseMeta{Ttl: durationpb.New(60e9)}
	normal := func(msg string) *fnv1.Result {
		return &fnv1.Result{Severity: fnv1.Severity_SEVERITY_NORMAL, Message: msg, Target: fnv1.Target_TARGET_COMPOSITE.Enum()}
	}
	ready := func(o string) *fnv1.Resource {
		return &fnv1.Resource{Resource: resource.MustStructJSON(o), Ready: fnv1.Ready_READY_TRUE}
	}
	type want struct {
		rsp *fnv1.RunFunctionResponse
		err error
	}
	cases := map[string]struct {
		reason string
		req    *fnv1.RunFunctionRequest
		want   want
	}{
		"OneCPUNode": {
			reason: "A CPU node gets its finest-grain ResourceFlavor, the generic catalog entry and the derived generic pool, " +
				"whose entrance is the walkthrough's; the composite's status carries the compact flavors and catalog.",
			req: inventory(`{"settings": {"mixedOnNode": true, "derivedFromNode": true}, "classes": [` + epycNode + `]}`),
			want: want{rsp: &fnv1.RunFunctionResponse{
				Meta: ttl,
				Desired: &fnv1.State{
					Composite: &fnv1.Resource{Resource: resource.MustStructJSON(epycStatus)},
					Resources: map[string]*fnv1.Resource{
						"resourceflavor-gpustack--amd-epyc-7r13-linux-amd64-16c": ready(epycFlavor),
						"instancetypeflavor-gpustack--generic":                   ready(genericEntry),
						"instancetype-gpustack--generic-linux-amd64":             ready(genericType),
					},
				},
				Results: []*fnv1.Result{normal("composed 1 flavors and 1 catalog entries from 1 nodes")},
			}},
		},
		"NotDerived": {
			reason: "With instance-type-derived-from-node off, the flavors and the catalog are composed and no InstanceType.",
			req:    inventory(`{"settings": {"mixedOnNode": true}, "classes": [` + epycNode + `]}`),
			want: want{rsp: &fnv1.RunFunctionResponse{
				Meta: ttl,
				Desired: &fnv1.State{
					Composite: &fnv1.Resource{Resource: resource.MustStructJSON(epycStatus)},
					Resources: map[string]*fnv1.Resource{
						"resourceflavor-gpustack--amd-epyc-7r13-linux-amd64-16c": ready(epycFlavor),
						"instancetypeflavor-gpustack--generic":                   ready(genericEntry),
					},
				},
				Results: []*fnv1.Result{normal("composed 1 flavors and 1 catalog entries from 1 nodes")},
			}},
		},
		"NodeWithoutArch": {
			reason: "A node the function cannot place is warned about by name and left out; the rest (here nothing) is composed.",
			req: inventory(`{"settings": {}, "classes": [{"names": ["a"], "identity": {"name": "", "os": "linux", "arch": "",
				"cpu": {"key": "x", "cores": 1}}}]}`),
			want: want{rsp: &fnv1.RunFunctionResponse{
				Meta:    ttl,
				Desired: &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(`{"status": {"flavors": [], "catalog": []}}`)}},
				Results: []*fnv1.Result{
					{Severity: fnv1.Severity_SEVERITY_WARNING, Message: "node a has no os or arch; it is left out of every pool",
						Target: fnv1.Target_TARGET_COMPOSITE.Enum()},
					normal("composed 0 flavors and 0 catalog entries from 0 nodes"),
				},
			}},
		},
		"UnreadableSpec": {
			reason: "A spec that does not decode is fatal, and says which field is wrong.",
			req:    inventory(`{"classes": "oops"}`),
			want: want{rsp: &fnv1.RunFunctionResponse{
				Meta: ttl,
				Results: []*fnv1.Result{{Severity: fnv1.Severity_SEVERITY_FATAL, Target: fnv1.Target_TARGET_COMPOSITE.Enum(),
					Message: "cannot read the node inventory from spec: cannot unmarshal value from JSON: json: cannot unmarshal " +
						"string into Go struct field NodeInventorySpec.classes of type []pools.NodeClass"}},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp, err := (&Function{}).RunFunction(context.Background(), tc.req)
			if diff := cmp.Diff(tc.want.rsp, rsp, protocmp.Transform()); diff != "" {
				t.Errorf("%s\nf.RunFunction(...): -want rsp, +got rsp:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.err, err); diff != "" {
				t.Errorf("%s\nf.RunFunction(...): -want err, +got err:\n%s", tc.reason, diff)
			}
		})
	}
}
