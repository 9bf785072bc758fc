package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// fixed serves the same states at generation 7.
type fixed []MemberState

func (f fixed) States() ([]MemberState, int64) { return f, 7 }

// testServer is a Server of src whose resourceVersions are "e.<revision>", revisions counted from 1 (its clock
// never moves).
func testServer(src StateSource) *Server {
	s := &Server{Source: src, WatchInterval: 10 * time.Millisecond}
	s.historyOnce.Do(func() {
		s.served = newHistory()
		s.served.epoch, s.served.now = "e", func() time.Time { return time.Time{} }
	})
	return s
}

func TestServer(t *testing.T) {
	inst := workerv1.Instance{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "notebook"}, Spec: workerv1.InstanceSpec{Type: "gpu"},
		Status: workerv1.InstanceStatus{Phase: "Running", NodeName: "node-a", AccessAddresses: []string{"10.0.0.7"}}}
	vol := workerv1.InstancePersistentVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "workspace"},
		Spec: workerv1.InstancePersistentVolumeSpec{Capacity: resource.MustParse("100Gi")}, Status: workerv1.InstancePersistentVolumeStatus{Phase: "Bound", Volume: "pvc-1"}}
	s := testServer(fixed{{Name: "a", Reachable: true, InstanceTypes: []workerv1.InstanceType{gpuType("gpu", 1, 1, 1, workerv1.InstanceTypeActive)},
		Instances: []workerv1.Instance{inst}, PersistentVolumes: []workerv1.InstancePersistentVolume{vol},
		VolumeTypes: []workerv1.InstancePersistentVolumeType{{ObjectMeta: metav1.ObjectMeta{Name: "local-path"},
			Spec: workerv1.InstancePersistentVolumeTypeSpec{Provisioner: "rancher.io/local-path", Default: true, BindingMode: "WaitForFirstConsumer"}}},
		SSHKeys: []workerv1.InstanceSSHPublicKey{{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "alice"},
			Status: workerv1.CredentialStatus{Secret: "alice", Conditions: []metav1.Condition{{Type: workerv1.ConditionReady, Status: metav1.ConditionTrue}}}}},
		PullSecrets: []metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "registry"}}}}})
	type want struct {
		Code int
		Body string
	}
	cases := map[string]struct {
		reason string
		method string
		path   string
		accept string
		want   want
	}{
		"Discovery": {
			reason: "The group version lists its read-only resources, as kube-apiserver's aggregator asks.",
			path:   "/apis/gateway.gpustack.ai/v1",
			want:   want{Code: 200, Body: `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"gateway.gpustack.ai/v1","resources":[{"name":"aggregatedinstancetypes","singularName":"aggregatedinstancetype","namespaced":false,"kind":"AggregatedInstanceType","verbs":["get","list","watch"],"shortNames":["ait"],"categories":["gpustack"]},{"name":"clusterinstancetypes","singularName":"clusterinstancetype","namespaced":false,"kind":"ClusterInstanceType","verbs":["get","list","watch"],"shortNames":["cit"],"categories":["gpustack"]},{"name":"clusterinstances","singularName":"clusterinstance","namespaced":true,"kind":"ClusterInstance","verbs":["get","list","watch"],"categories":["gpustack"]},{"name":"clusterinstancepersistentvolumes","singularName":"clusterinstancepersistentvolume","namespaced":true,"kind":"ClusterInstancePersistentVolume","verbs":["get","list","watch"],"categories":["gpustack"]},{"name":"clusterinstancepersistentvolumetypes","singularName":"clusterinstancepersistentvolumetype","namespaced":false,"kind":"ClusterInstancePersistentVolumeType","verbs":["get","list","watch"],"categories":["gpustack"]},{"name":"clusterinstancesshpublickeys","singularName":"clusterinstancesshpublickey","namespaced":true,"kind":"ClusterInstanceSSHPublicKey","verbs":["get","list","watch"],"categories":["gpustack"]},{"name":"clusterinstanceimagepullsecrets","singularName":"clusterinstanceimagepullsecret","namespaced":true,"kind":"ClusterInstanceImagePullSecret","verbs":["get","list","watch"],"categories":["gpustack"]},{"name":"clustermembers","singularName":"clustermember","namespaced":false,"kind":"ClusterMember","verbs":["get","list","watch"],"categories":["gpustack"]}]}`},
		},
		"NamespacedTable": {
			reason: "A namespaced list as a Table: one row per Instance of the namespace, named <cluster>.<instance>.",
			path:   "/apis/gateway.gpustack.ai/v1/namespaces/team/clusterinstances",
			accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
			want:   want{Code: 200, Body: `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"e.8"},"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"","priority":0},{"name":"Cluster","type":"string","format":"","description":"","priority":0},{"name":"Type","type":"string","format":"","description":"","priority":0},{"name":"Phase","type":"string","format":"","description":"","priority":0},{"name":"Node","type":"string","format":"","description":"","priority":0},{"name":"Address","type":"string","format":"","description":"","priority":0}],"rows":[{"cells":["a.notebook","a","gpu","Running","node-a","10.0.0.7"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a.notebook","namespace":"team","resourceVersion":"e.3"}}}]}`},
		},
		"Volumes": {
			reason: "A member's InstancePersistentVolumes, with the cluster each is in.",
			path:   "/apis/gateway.gpustack.ai/v1/clusterinstancepersistentvolumes",
			accept: "application/json;as=Table;v=v1;g=meta.k8s.io",
			want:   want{Code: 200, Body: `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"e.8"},"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"","priority":0},{"name":"Cluster","type":"string","format":"","description":"","priority":0},{"name":"Capacity","type":"string","format":"","description":"","priority":0},{"name":"Phase","type":"string","format":"","description":"","priority":0},{"name":"Volume","type":"string","format":"","description":"","priority":0}],"rows":[{"cells":["a.workspace","a","100Gi","Bound","pvc-1"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a.workspace","namespace":"team","resourceVersion":"e.4"}}}]}`},
		},
		"VolumeTypes": {
			reason: "A member's InstancePersistentVolumeTypes, cluster-scoped, named <cluster>.<type>.",
			path:   "/apis/gateway.gpustack.ai/v1/clusterinstancepersistentvolumetypes",
			accept: "application/json;as=Table;v=v1;g=meta.k8s.io",
			want:   want{Code: 200, Body: `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"e.8"},"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"","priority":0},{"name":"Cluster","type":"string","format":"","description":"","priority":0},{"name":"Provisioner","type":"string","format":"","description":"","priority":0},{"name":"Default","type":"string","format":"","description":"","priority":0},{"name":"Binding","type":"string","format":"","description":"","priority":0}],"rows":[{"cells":["a.local-path","a","rancher.io/local-path","true","WaitForFirstConsumer"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a.local-path","resourceVersion":"e.5"}}}]}`},
		},
		"SSHKeys": {
			reason: "A member's InstanceSSHPublicKeys: the Secret behind each and whether it is Ready, no spec.",
			path:   "/apis/gateway.gpustack.ai/v1/namespaces/team/clusterinstancesshpublickeys/a.alice",
			want:   want{Code: 200, Body: `{"kind":"ClusterInstanceSSHPublicKey","apiVersion":"gateway.gpustack.ai/v1","metadata":{"name":"a.alice","namespace":"team","resourceVersion":"e.6"},"cluster":"a","status":{"secret":"alice","conditions":[{"type":"Ready","status":"True","lastTransitionTime":null,"reason":"","message":""}]}}`},
		},
		"PullSecrets": {
			reason: "A member's InstanceImagePullSecrets by name.",
			path:   "/apis/gateway.gpustack.ai/v1/namespaces/team/clusterinstanceimagepullsecrets",
			accept: "application/json;as=Table;v=v1;g=meta.k8s.io",
			want:   want{Code: 200, Body: `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"e.8"},"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"","priority":0},{"name":"Cluster","type":"string","format":"","description":"","priority":0}],"rows":[{"cells":["a.registry","a"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a.registry","namespace":"team","resourceVersion":"e.7"}}}]}`},
		},
		"OtherNamespace": {
			reason: "Another namespace holds none.",
			path:   "/apis/gateway.gpustack.ai/v1/namespaces/other/clusterinstances",
			want:   want{Code: 200, Body: `{"apiVersion":"gateway.gpustack.ai/v1","items":[],"kind":"ClusterInstanceList","metadata":{"resourceVersion":"e.8"}}`},
		},
		"ClusterScopedInNamespace": {
			reason: "A cluster-scoped resource has no namespaced path.",
			path:   "/apis/gateway.gpustack.ai/v1/namespaces/team/clustermembers",
			want:   want{Code: 404, Body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","code":404}`},
		},
		"ReadOnly": {
			reason: "Nothing can be written.",
			method: http.MethodPost,
			path:   "/apis/gateway.gpustack.ai/v1/clustermembers",
			want:   want{Code: 405, Body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the gateway's API is read-only: POST is not allowed","reason":"MethodNotAllowed","code":405}`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			req := httptest.NewRequest(method, tc.path, nil)
			req.Header.Set("Accept", tc.accept)
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			var compact any
			_ = json.Unmarshal(rec.Body.Bytes(), &compact)
			var wantBody any
			_ = json.Unmarshal([]byte(tc.want.Body), &wantBody)
			if diff := cmp.Diff(tc.want.Code, rec.Code); diff != "" {
				t.Errorf("%s\nServeHTTP(%s): -want, +got:\n%s", tc.reason, tc.path, diff)
			}
			if diff := cmp.Diff(wantBody, compact); diff != "" {
				t.Errorf("%s\nServeHTTP(%s) body: -want, +got:\n%s", tc.reason, tc.path, diff)
			}
		})
	}
}

func TestServerSelectors(t *testing.T) {
	instance := func(namespace, name, app string) workerv1.Instance {
		return workerv1.Instance{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": app}}}
	}
	s := &Server{Source: fixed{
		{Name: "a", Reachable: true, Instances: []workerv1.Instance{instance("team", "notebook", "jupyter"), instance("team", "trainer", "torch")}},
		{Name: "b", Reachable: true, Instances: []workerv1.Instance{instance("lab", "notebook", "jupyter")}},
	}}
	type want struct {
		code  int
		names []string
	}
	cases := map[string]struct {
		reason string
		query  string
		want   want
	}{
		"Everything": {
			reason: "No selector lists every member's Instances, by namespace and name as an API server does.",
			want:   want{code: 200, names: []string{"b.notebook", "a.notebook", "a.trainer"}},
		},
		"Label": {
			reason: "A label selector keeps the Instances whose labels match, on every member.",
			query:  "labelSelector=app%3Djupyter",
			want:   want{code: 200, names: []string{"b.notebook", "a.notebook"}},
		},
		"LabelSet": {
			reason: "Set-based selectors work as the API server's do.",
			query:  "labelSelector=app+notin+%28jupyter%29",
			want:   want{code: 200, names: []string{"a.trainer"}},
		},
		"NameAndNamespace": {
			reason: "Field selectors on metadata.name and metadata.namespace.",
			query:  "fieldSelector=metadata.namespace%3Dteam%2Cmetadata.name%21%3Da.trainer",
			want:   want{code: 200, names: []string{"a.notebook"}},
		},
		"BadLabel": {
			reason: "A selector that does not parse is a bad request, not everything.",
			query:  "labelSelector=app%3D%3D%3Djupyter",
			want:   want{code: 400},
		},
		"UnsupportedField": {
			reason: "A field the API does not index is refused, as the API server refuses it, not ignored.",
			query:  "fieldSelector=spec.type%3Dgpu",
			want:   want{code: 400},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := "/apis/gateway.gpustack.ai/v1/clusterinstances?" + tc.query
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			got := want{code: rec.Code}
			if rec.Code == http.StatusOK {
				var list struct {
					Items []struct{ Metadata metav1.ObjectMeta } `json:"items"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
					t.Fatal(err)
				}
				for _, it := range list.Items {
					got.names = append(got.names, it.Metadata.Name)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nServeHTTP(%s): -want, +got:\n%s\n%s", tc.reason, path, diff, rec.Body.String())
			}
		})
	}
}

// The OpenAPI v3 document names every served kind with its group, version and kind, as kubectl explain looks
// them up, and holds the schemas of what they hold (an InstanceType's spec, from worker.gpustack.ai/v1).
func TestOpenAPIV3(t *testing.T) {
	doc, err := OpenAPIV3()
	if err != nil {
		t.Fatalf("OpenAPIV3(): %v", err)
	}
	var kinds []string
	for _, s := range doc.Components.Schemas {
		if gvks, ok := s.Extensions["x-kubernetes-group-version-kind"].([]any); ok {
			kinds = append(kinds, gvks[0].(map[string]any)["kind"].(string))
		}
	}
	slices.Sort(kinds)
	want := []string{"AggregatedInstanceType", "AggregatedInstanceTypeList", "ClusterInstance", "ClusterInstanceImagePullSecret",
		"ClusterInstanceImagePullSecretList", "ClusterInstanceList", "ClusterInstancePersistentVolume", "ClusterInstancePersistentVolumeList",
		"ClusterInstancePersistentVolumeType", "ClusterInstancePersistentVolumeTypeList", "ClusterInstanceSSHPublicKey",
		"ClusterInstanceSSHPublicKeyList", "ClusterInstanceType", "ClusterInstanceTypeList", "ClusterMember", "ClusterMemberList"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("OpenAPIV3(): kinds marked with x-kubernetes-group-version-kind: -want, +got:\n%s", diff)
	}
	status := doc.Components.Schemas[gatewayv1.AggregatedInstanceTypeStatus{}.OpenAPIModelName()]
	if status == nil || status.Properties["tiers"].Description == "" {
		t.Errorf("OpenAPIV3(): AggregatedInstanceTypeStatus has no described tiers: %+v", status)
	}
	if doc.Components.Schemas[workerv1.InstanceTypeSpec{}.OpenAPIModelName()] == nil {
		t.Error("OpenAPIV3(): no schema for the InstanceTypeSpec a ClusterInstanceType holds")
	}

	rec := httptest.NewRecorder()
	(&Server{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi/v3", nil))
	var discovery struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &discovery); err != nil || discovery.Paths["apis/gateway.gpustack.ai/v1"].ServerRelativeURL == "" {
		t.Errorf("GET /openapi/v3: want the group version's document listed, got %d %s (%v)", rec.Code, rec.Body.String(), err)
	}
}
