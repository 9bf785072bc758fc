package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "settings.gpustack.ai", Version: "v1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme: each kind's file adds its own
	// (kinds.Register), as apimachinery's builder does, which api packages can import without controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder()

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// APIServiceName is the APIService that puts this group behind kube-apiserver.
const APIServiceName = "v1.settings.gpustack.ai"

// Resource returns the group and resource of a resource of this group.
func Resource(resource string) schema.GroupResource {
	return GroupVersion.WithResource(resource).GroupResource()
}

// SettingTypeMeta is the apiVersion and kind of a Setting.
func SettingTypeMeta() metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "Setting"}
}

// Kind returns the group and kind of a kind of this group.
func Kind(kind string) schema.GroupKind {
	return GroupVersion.WithKind(kind).GroupKind()
}
