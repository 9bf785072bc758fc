package main

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/vendors"
)

func TestGenerate(t *testing.T) {
	inv := generate(30)
	if err := inv.Validate(); err != nil {
		t.Fatalf("generate(30) is not a valid inventory: %v", err)
	}
	seen := map[string]int{}
	for _, n := range inv.Nodes {
		for _, a := range n.Accelerators {
			if _, ok := vendors.Lookup(a.Vendor); !ok {
				t.Errorf("node %s: unknown vendor %q", n.Name, a.Vendor)
			}
			seen[a.Product] += int(a.Count)
		}
	}
	if len(seen) != len(products) {
		t.Errorf("30 nodes cover %d products, want all %d", len(seen), len(products))
	}
	if got := seen[products[0].name]; got != 3*cardsPerNode {
		t.Errorf("30 nodes over 12 products: want %d cards of %s, got %d", 3*cardsPerNode, products[0].name, got)
	}
}

func TestRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench", "results.json")
	for _, r := range []*result{
		{Nodes: 5000, Date: "old"}, {Nodes: 500, Date: "a"}, {Nodes: 5000, Date: "new"},
	} {
		if err := record(path, r); err != nil {
			t.Fatal(err)
		}
	}
	var got results
	if err := readResults(path, &got); err != nil {
		t.Fatal(err)
	}
	want := results{Runs: []*result{{Nodes: 500, Date: "a"}, {Nodes: 5000, Date: "new"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a newer run replaces the one at its node count; runs sorted by nodes\nrecord(...): -want, +got:\n%s", diff)
	}
}
