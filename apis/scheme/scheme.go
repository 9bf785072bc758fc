// Package scheme holds every kind the operator reads or writes: Kubernetes' own (CRDs too), this project's, Kueue's and
// NFD's. The binaries and the tests that talk to a real API server share it.
package scheme

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// New returns a scheme with every kind the operator uses.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(workerv1.AddToScheme(s))
	utilruntime.Must(kueuev1beta2.AddToScheme(s))
	utilruntime.Must(nfdv1alpha1.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}
