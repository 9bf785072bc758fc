package instancetype

import (
	"context"
	"testing"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
)

// pool is an XInstanceTypePool with the given spec, as the composer or Crossplane sends it.
func pool(spec string) *fnv1.RunFunctionRequest {
	return &fnv1.RunFunctionRequest{Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(
		`{"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "XInstanceTypePool", "metadata": {"name": "p"}, "spec": ` +
			spec + `}`)}}}
}

// genericPool is the derived generic pool over the walkthrough's CPU node, with 4 of its 16 cores requested by
// running Pods, and entrances in two namespaces.
const genericPool = `{"name": "gpustack--generic-linux-amd64",
	"type": {"acceleratable": false, "arch": "amd64", "generalGroup": "generic", "localStorage": "100Gi",
		"manufacturer": "generic", "os": "linux", "unitResources": {"cpu": "1", "ram": "2Gi"}},
	"flavors": [{"name": "gpustack--amd-epyc-7r13-linux-amd64-16c", "gKey": "amd-epyc-7r13", "os": "linux", "arch": "amd64",
		"count": 16, "nodes": ["node-cpu"]}],
	"nodes": [{"names": ["node-cpu"], "identity": {"name": "", "os": "linux", "arch": "amd64", "managed": true,
		"cpu": {"key": "amd-epyc-7r13", "manufacturer": "amd", "cores": 16, "requestedMilli": 4000}}}],
	"namespaces": ["team-a", "default"], "settings": {"mixedOnNode": true, "derivedFromNode": true}}`

// entrance is the generic pool's LocalQueue in a namespace.
func entrance(ns string) string {
	return `{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
		"metadata": {"name": "gpustack-fnv64-3b93966fd73eb9ec", "namespace": "` + ns + `",
			"annotations": {"schedule.gpustack.ai/queue": "gpustack--generic-linux-amd64"}},
		"spec": {"clusterQueue": "gpustack--generic-linux-amd64"}}`
}

func TestRunFunction(t *testing.T) {
	ttl := &fnv1.ResponseMeta{Ttl: durationpb.New(60e9)}
	fatal := func(msg string) *fnv1.Result {
		return &fnv1.Result{Severity: fnv1.Severity_SEVERITY_FATAL, Message: msg, Target: fnv1.Target_TARGET_COMPOSITE.Enum()}
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
		"GenericPool": {
			reason: "The CPU pool's isolated ClusterQueue covers cpu with the flavor's 16 cores; each namespace gets the " +
				"entrance LocalQueue; the status shows 12 of 16 cores left, which is also the largest one request.",
			req: pool(genericPool),
			want: want{rsp: &fnv1.RunFunctionResponse{
				Meta: ttl,
				Desired: &fnv1.State{
					Composite: &fnv1.Resource{Resource: resource.MustStructJSON(`{"status": {
						"cpu": {"capacity": "16", "onceMaxRequest": "12", "remaining": "12"},
						"entrance": "gpustack-fnv64-3b93966fd73eb9ec", "phase": "Active",
						"summary": {"accelerator": "0/0 0/0 0/0 0/0", "cpu": "12/12", "unit": "1/2Gi/100Gi"}}}`)},
					Resources: map[string]*fnv1.Resource{
						"clusterqueue": ready(`{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
							"metadata": {"name": "gpustack--generic-linux-amd64", "labels": {
								"feature.gpustack.ai/acceleratable": "false", "kubernetes.io/arch": "amd64",
								"kubernetes.io/os": "linux", "resource.gpustack.ai/type": "instancetypes"}},
							"spec": {
								"namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "Exists"}]},
								"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{
									"name": "gpustack--amd-epyc-7r13-linux-amd64-16c",
									"resources": [{"name": "cpu", "nominalQuota": "16"}]}]}]}}`),
						"localqueue-default": ready(entrance("default")),
						"localqueue-team-a":  ready(entrance("team-a")),
					},
				},
			}},
		},
		"NoName": {
			reason: "A pool without the InstanceType's name is fatal, naming the field.",
			req:    pool(`{"type": {}}`),
			want: want{rsp: &fnv1.RunFunctionResponse{Meta: ttl,
				Results: []*fnv1.Result{fatal("spec.name: the InstanceType's name is required")}}},
		},
		"UnknownManufacturer": {
			reason: "An accelerator group of no known manufacturer is fatal, naming the type and the group.",
			req:    pool(`{"name": "odd", "type": {"acceleratable": true, "acceleratorGroup": "acme-x1"}}`),
			want: want{rsp: &fnv1.RunFunctionResponse{Meta: ttl,
				Results: []*fnv1.Result{fatal(`InstanceType odd: spec.acceleratorGroup "acme-x1" names no known manufacturer`)}}},
		},
		"UnreadableSpec": {
			reason: "A spec that does not decode is fatal, and says what is wrong.",
			req:    pool(`{"name": "x", "type": {"unitResources": {"cpu": "zero"}}}`),
			want: want{rsp: &fnv1.RunFunctionResponse{Meta: ttl,
				Results: []*fnv1.Result{fatal("cannot read the pool from spec: cannot unmarshal value from JSON: quantities " +
					"must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")}}},
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
