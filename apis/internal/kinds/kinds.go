// Package kinds registers an API package's kinds with apimachinery's SchemeBuilder, which api packages can
// import without controller-runtime.
package kinds

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Register adds objects, kinds of gv, with gv's list and watch options, to what b's AddToScheme registers.
func Register(b *runtime.SchemeBuilder, gv schema.GroupVersion, objects ...runtime.Object) {
	b.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(gv, objects...)
		metav1.AddToGroupVersion(s, gv)
		return nil
	})
}
