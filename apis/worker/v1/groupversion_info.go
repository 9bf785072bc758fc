package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "worker.gpustack.ai", Version: "v1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme: each kind's file adds its own
	// (register), as apimachinery's builder does, which api packages can import without controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder()

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// SystemNamespace is the namespace the operator runs in and keeps its Settings and NodeFeatures in.
const SystemNamespace = "gpustack-system"

// register adds kinds of this package, with the group version's list and watch options, to what AddToScheme
// registers.
func register(objects ...runtime.Object) {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, objects...)
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})
}
