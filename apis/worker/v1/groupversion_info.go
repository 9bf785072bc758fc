package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "worker.gpustack.ai", Version: "v1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme: each kind's file adds its own
	// (kinds.Register), as apimachinery's builder does, which api packages can import without controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder()

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// SystemNamespace is the namespace the operator runs in and keeps its Settings and NodeFeatures in.
const SystemNamespace = "gpustack-system"
