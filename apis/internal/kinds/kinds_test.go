package kinds_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpustack/gpustack-operator/apis/internal/kinds"
)

func TestRegister(t *testing.T) {
	gv := schema.GroupVersion{Group: "example.gpustack.ai", Version: "v1"}
	b := runtime.NewSchemeBuilder()
	kinds.Register(&b, gv, &metav1.PartialObjectMetadata{}, &metav1.PartialObjectMetadataList{})
	s := runtime.NewScheme()
	if err := b.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	got := []bool{s.Recognizes(gv.WithKind("PartialObjectMetadata")), s.Recognizes(gv.WithKind("PartialObjectMetadataList")),
		s.Recognizes(gv.WithKind("ListOptions")), s.Recognizes(gv.WithKind("WatchEvent"))}
	if diff := cmp.Diff([]bool{true, true, true, true}, got); diff != "" {
		t.Errorf("Register(...): the kinds, the group version's ListOptions and WatchEvent recognized: -want, +got:\n%s", diff)
	}
}
