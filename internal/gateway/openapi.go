package gateway

import (
	"net/http"
	"reflect"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/gpustack/gpustack-operator/apis/gateway/openapi"
	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
)

// OpenAPIV3 is the OpenAPI v3 document of gateway.gpustack.ai/v1: the schemas of the served kinds, each marked
// with its group, version and kind as kube-apiserver marks its own, so kubectl explain finds them, and of every
// type they hold.
func OpenAPIV3() (*spec3.OpenAPI, error) {
	info := &spec.Info{InfoProps: spec.InfoProps{Title: "gpustack-operator worker-gateway", Version: gatewayv1.GroupVersion.Version}}
	var names []string
	for _, res := range resources {
		names = append(names, res.model.OpenAPIModelName(), res.listModel.OpenAPIModelName())
	}
	schemas, err := builder3.BuildOpenAPIDefinitionsForResources(&common.OpenAPIV3Config{Info: info, GetDefinitions: openapi.GetOpenAPIDefinitions}, names...)
	if err != nil {
		return nil, errors.Wrap(err, "cannot build the OpenAPI schemas of gateway.gpustack.ai/v1")
	}
	// kubectl explain finds a resource's kind by the operations of its paths, and the kind's schema by its mark.
	paths := map[string]*spec3.Path{}
	for _, res := range resources {
		for kind, model := range map[string]modelled{res.kind: res.model, res.kind + "List": res.listModel} {
			if got := reflect.TypeOf(model).Name(); got != kind {
				return nil, errors.Errorf("resource %s: the model of kind %s is a %s", res.name, kind, got)
			}
			s, ok := schemas[model.OpenAPIModelName()]
			if !ok {
				return nil, errors.Errorf("no OpenAPI schema for %s", model.OpenAPIModelName())
			}
			s.AddExtension("x-kubernetes-group-version-kind", []any{gvk(kind)})
		}
		prefix := "/apis/" + gatewayv1.GroupVersion.String() + "/"
		if res.namespaced {
			prefix += "namespaces/{namespace}/"
		}
		paths[prefix+res.name] = getPath("list "+res.name, res.kind+"List", res.listModel.OpenAPIModelName())
		paths[prefix+res.name+"/{name}"] = getPath("read "+res.singular, res.kind, res.model.OpenAPIModelName())
	}
	return &spec3.OpenAPI{Version: "3.0.0", Info: info, Paths: &spec3.Paths{Paths: paths}, Components: &spec3.Components{Schemas: schemas}}, nil
}

// gvk is the x-kubernetes-group-version-kind of a kind of the group.
func gvk(kind string) map[string]any {
	return map[string]any{"group": gatewayv1.GroupVersion.Group, "version": gatewayv1.GroupVersion.Version, "kind": kind}
}

// getPath is a path whose GET answers the kind, whose schema is the model's.
func getPath(description, kind, model string) *spec3.Path {
	ok := &spec3.Response{ResponseProps: spec3.ResponseProps{Description: "OK", Content: map[string]*spec3.MediaType{
		"application/json": {MediaTypeProps: spec3.MediaTypeProps{Schema: spec.RefSchema("#/components/schemas/" + common.EscapeJsonPointer(model))}}}}}
	op := &spec3.Operation{OperationProps: spec3.OperationProps{Description: description,
		Responses: &spec3.Responses{ResponsesProps: spec3.ResponsesProps{StatusCodeResponses: map[int]*spec3.Response{http.StatusOK: ok}}}}}
	op.AddExtension("x-kubernetes-group-version-kind", gvk(kind))
	return &spec3.Path{PathProps: spec3.PathProps{Get: op}}
}

// openAPIHandler serves the document at /openapi/v3/apis/gateway.gpustack.ai/v1, and the discovery of it at
// /openapi/v3, where kube-apiserver's aggregation layer looks for an aggregated API's schemas.
func openAPIHandler() (http.Handler, error) {
	doc, err := OpenAPIV3()
	if err != nil {
		return nil, err
	}
	svc := handler3.NewOpenAPIService()
	svc.UpdateGroupVersion("apis/"+gatewayv1.GroupVersion.String(), doc)
	mux := http.NewServeMux()
	mux.HandleFunc("/openapi/v3", svc.HandleDiscovery)
	mux.HandleFunc("/openapi/v3/", svc.HandleGroupVersion)
	return mux, nil
}
