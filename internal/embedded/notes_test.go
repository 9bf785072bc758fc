package embedded

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/functions/flavors"
	"github.com/gpustack/gpustack-operator/functions/xrs"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers/simulated"
)

// TestCatalogIsWhatTheNotesSay reads every example cluster's ResourceFlavors back from their note.gpustack.ai
// annotations alone, groups them as the catalog does, and wants exactly the InstanceTypeFlavors composed
// beside them, with CPU awareness off and on; and the flavors the same either way.
func TestCatalogIsWhatTheNotesSay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "clusters", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example clusters: %v", err)
	}
	for _, file := range files {
		inv, err := simulated.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := simulated.Nodes(context.Background(), inv)
		if err != nil {
			t.Fatal(err)
		}
		var flavorsOff map[string]*kueuev1beta2.ResourceFlavor
		for _, aware := range []bool{false, true} {
			settings := xrs.DefaultFunctionSettings()
			settings.AwareCPUManufacturer = aware
			c := flavors.Compose(xrs.Inventory(nodes, settings))
			rfs := map[string]*kueuev1beta2.ResourceFlavor{}
			want := map[string]workerv1.InstanceTypeFlavorSpec{}
			var projected []pools.Flavor
			for _, o := range c.Objects {
				switch o := o.(type) {
				case *kueuev1beta2.ResourceFlavor:
					rfs[o.Name] = o
					f, err := pools.FlavorFromNotes(o.Name, o.Labels, o.Annotations)
					if err != nil {
						t.Fatalf("%s: %v", file, err)
					}
					projected = append(projected, f)
				case *workerv1.InstanceTypeFlavor:
					want[o.Name] = o.Spec
				}
			}
			// As Flavors returns them, by name: an entry is described by its first flavor.
			slices.SortFunc(projected, func(a, b pools.Flavor) int { return strings.Compare(a.Name, b.Name) })
			got := map[string]workerv1.InstanceTypeFlavorSpec{}
			for _, e := range pools.Catalog(projected, aware) {
				got[e.Name] = flavors.InstanceTypeFlavor(e).Spec
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s, aware %t: the catalog is what the flavors' notes say: -composed, +projected:\n%s", filepath.Base(file), aware, diff)
			}
			if !aware {
				flavorsOff = rfs
			} else if diff := cmp.Diff(flavorsOff, rfs); diff != "" {
				t.Errorf("%s: the ResourceFlavors do not change with CPU awareness: -off, +on:\n%s", filepath.Base(file), diff)
			}
		}
	}
}
