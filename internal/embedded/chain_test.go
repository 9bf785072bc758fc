package embedded

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/functions/xrs"
	"github.com/gpustack/gpustack-operator/pools"
)

// typesOf returns the InstanceTypes among the flavors function's objects (the derived ones), sorted by name.
func typesOf(t testing.TB, out Output) []workerv1.InstanceType {
	t.Helper()
	var types []workerv1.InstanceType
	for _, o := range out.Objects {
		if o.GetKind() != "InstanceType" {
			continue
		}
		it := workerv1.InstanceType{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &it); err != nil {
			t.Fatal(err)
		}
		types = append(types, it)
	}
	sort.Slice(types, func(i, j int) bool { return types[i].Name < types[j].Name })
	return types
}

// composition is one recompute's answers: the flavors function's, then each pool's.
type composition struct {
	Flavors   Output
	Inventory xrs.NodeInventoryStatus
	Pools     map[string]Output
	Statuses  map[string]workerv1.InstanceTypeStatus
}

// step is what a recompute is asked, besides the nodes: the settings and the types' own inputs.
type step struct {
	settings xrs.FunctionSettings
	now      metav1.Time
	// extra are types no flavor derives (a pool with no flavor left, one held by its spec).
	extra      []workerv1.InstanceType
	namespaces []string
	reserving  int32
}

// spec is a pool's input for a type at a step; Flavors and Nodes are left for the caller.
func (s step) spec(it workerv1.InstanceType) xrs.InstanceTypePoolSpec {
	return xrs.InstanceTypePoolSpec{Name: it.Name, Generation: it.Generation, Labels: it.Labels, Type: it.Spec,
		Namespaces: s.namespaces, Settings: s.settings, Now: s.now, ReservingWorkloads: s.reserving,
		NoFlavorsSince: it.Status.NoFlavorsSince}
}

// fullRecompute is the oracle: every function run on every node, as a new Chain does it.
func fullRecompute(t *testing.T, nodes []pools.Node, s step) composition {
	t.Helper()
	ctx := context.Background()
	out, inv, err := Flavors(ctx, xrs.Inventory(nodes, s.settings))
	if err != nil {
		t.Fatal(err)
	}
	c := composition{Flavors: out, Inventory: inv, Pools: map[string]Output{}, Statuses: map[string]workerv1.InstanceTypeStatus{}}
	for _, it := range append(typesOf(t, out), s.extra...) {
		spec := s.spec(it)
		spec.Flavors, spec.Nodes = PoolFlavors(it.Spec, inv.Flavors), PoolNodes(it.Spec, inv.Flavors, nodes)
		if c.Pools[it.Name], c.Statuses[it.Name], err = InstanceType(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// chainRecompute is the same recompute by an updated Chain.
func chainRecompute(t *testing.T, chain *Chain, s step) composition {
	t.Helper()
	ctx := context.Background()
	out, inv, err := chain.Flavors(ctx, s.settings)
	if err != nil {
		t.Fatal(err)
	}
	c := composition{Flavors: out, Inventory: inv, Pools: map[string]Output{}, Statuses: map[string]workerv1.InstanceTypeStatus{}}
	for _, it := range append(typesOf(t, out), s.extra...) {
		if c.Pools[it.Name], c.Statuses[it.Name], err = chain.InstanceType(ctx, ptr.To(s.spec(it))); err != nil {
			t.Fatal(err)
		}
	}
	chain.Commit()
	return c
}

// change is one random change to the nodes: what a node event may bring.
type change func(r *rand.Rand, nodes map[string]pools.Node, chain *Chain)

// changes are the kinds of change a cluster's nodes go through, by name.
var changes = map[string]change{
	"a card taken or given back": func(r *rand.Rand, nodes map[string]pools.Node, chain *Chain) {
		n := pick(r, nodes)
		if len(n.Groups) == 0 {
			return
		}
		cards := append([]pools.Card(nil), n.Groups[0].Cards...)
		c := &cards[r.IntN(len(cards))]
		c.Mode, c.Remaining, c.AllocatedSlices = workerv1.AllocationMode(r.IntN(4)), pools.M/int64(1+r.IntN(4)), int32(r.IntN(3))
		n.Groups = append([]pools.Group(nil), n.Groups...)
		n.Groups[0].Cards = cards
		nodes[n.Name] = n
		chain.Set(n)
	},
	"CPU requested": func(r *rand.Rand, nodes map[string]pools.Node, chain *Chain) {
		n := pick(r, nodes)
		n.CPU.RequestedMilli = int64(r.IntN(64_000))
		nodes[n.Name] = n
		chain.Set(n)
	},
	"another product's cards": func(r *rand.Rand, nodes map[string]pools.Node, chain *Chain) {
		n := pick(r, nodes)
		if len(n.Groups) == 0 {
			return
		}
		p := products[r.IntN(len(products))]
		n.Groups = []pools.Group{n.Groups[0]}
		n.Groups[0].Key, n.Groups[0].Manufacturer, n.Groups[0].Product, n.Groups[0].Memory = p.key, p.mfr, p.key, p.memory
		nodes[n.Name] = n
		chain.Set(n)
	},
	"managed or not": func(r *rand.Rand, nodes map[string]pools.Node, chain *Chain) {
		n := pick(r, nodes)
		n.Managed = !n.Managed
		nodes[n.Name] = n
		chain.Set(n)
	},
	"a node gone": func(r *rand.Rand, nodes map[string]pools.Node, chain *Chain) {
		n := pick(r, nodes)
		delete(nodes, n.Name)
		chain.Remove(n.Name)
	},
	"a node joined": func(r *rand.Rand, nodes map[string]pools.Node, chain *Chain) {
		n := generated(len(products))[r.IntN(len(products))]
		n.Name = fmt.Sprintf("joined-%05d", r.IntN(100_000))
		nodes[n.Name] = n
		chain.Set(n)
	},
	"set again unchanged": func(r *rand.Rand, nodes map[string]pools.Node, chain *Chain) {
		chain.Set(pick(r, nodes))
	},
}

// pick returns a random node of nodes.
func pick(r *rand.Rand, nodes map[string]pools.Node) pools.Node {
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	return nodes[names[r.IntN(len(names))]]
}

// TestChainIsTheFullRecompute changes nodes, settings and the types' inputs at random and holds the updated
// Chain's every answer to the full recompute's after each change: the incremental path never drifts.
func TestChainIsTheFullRecompute(t *testing.T) {
	kinds := make([]string, 0, len(changes))
	for k := range changes {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	gone := workerv1.InstanceType{ObjectMeta: metav1.ObjectMeta{Name: "gone-pool"},
		Spec: workerv1.InstanceTypeSpec{Acceleratable: true, AcceleratorGroup: "nvidia-b200", OS: "linux", Arch: "amd64"}}
	cases := map[string]struct {
		reason string
		seed   uint64
		nodes  int
		steps  int
		// only are the kinds of change made; all when empty.
		only []string
	}{
		"LedgerOnly": {reason: "Cards taken and CPU requested never change the flavors: only the pools' views move.",
			seed: 1, nodes: 36, steps: 40, only: []string{"a card taken or given back", "CPU requested", "set again unchanged"}},
		"Everything": {reason: "Nodes come, go, change products and management among ledger changes.",
			seed: 2, nodes: 36, steps: 80},
		"EverythingAgain": {reason: "Another sequence of every kind.", seed: 3, nodes: 24, steps: 60},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(tc.seed, tc.seed))
			nodes, chain := map[string]pools.Node{}, NewChain()
			for _, n := range busy(tc.nodes) {
				nodes[n.Name] = n
				chain.Set(n)
			}
			kinds := kinds
			if len(tc.only) > 0 {
				kinds = tc.only
			}
			s := step{settings: xrs.DefaultFunctionSettings(), now: metav1.NewTime(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)),
				namespaces: []string{"default", "team-a"}}
			// A pool that lost its flavors before the first step: holding, then draining once its grace is over.
			gone := gone.DeepCopy()
			gone.Status.NoFlavorsSince = s.now.DeepCopy()
			for i := range tc.steps {
				kind := kinds[r.IntN(len(kinds))]
				changes[kind](r, nodes, chain)
				// The types' own inputs move too: time passes, a pool loses its flavors, settings and namespaces change.
				s.now = metav1.NewTime(s.now.Add(time.Duration(r.IntN(200)) * time.Second))
				s.reserving = int32(min(1, r.IntN(10)))
				s.extra = nil
				if r.IntN(4) != 0 {
					s.extra = append(s.extra, *gone)
				}
				if r.IntN(10) == 0 {
					s.settings.MixedOnNode = !s.settings.MixedOnNode
				}
				if r.IntN(10) == 0 {
					s.namespaces = append(s.namespaces, fmt.Sprintf("team-%d", i))
				}
				list := make([]pools.Node, 0, len(nodes))
				for _, n := range nodes {
					list = append(list, n)
				}
				sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
				want, got := fullRecompute(t, list, s), chainRecompute(t, chain, s)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("%s\nstep %d (%s): Chain, -full recompute, +updated Chain:\n%s", tc.reason, i, kind, diff)
				}
			}
		})
	}
}

// TestChainSharesWhatDidNotChange checks that the Chain does not redo what no change reached: the flavors
// function's answer and an untouched pool's composition come back as they were (the same objects), and a pool
// one of whose nodes changed is composed again.
func TestChainSharesWhatDidNotChange(t *testing.T) {
	ctx := context.Background()
	chain := NewChain()
	nodes := generated(24)
	for _, n := range nodes {
		chain.Set(n)
	}
	s := step{settings: xrs.DefaultFunctionSettings(), namespaces: []string{"default"}}
	first := map[string]Output{}
	out, _, err := chain.Flavors(ctx, s.settings)
	if err != nil {
		t.Fatal(err)
	}
	types := typesOf(t, out)
	for _, it := range types {
		if first[it.Name], _, err = chain.InstanceType(ctx, ptr.To(s.spec(it))); err != nil {
			t.Fatal(err)
		}
	}
	chain.Commit()

	// Node 0's first card is taken: its ledger changes, not its identity.
	changed := nodes[0]
	changed.Groups = append([]pools.Group(nil), changed.Groups...)
	changed.Groups[0].Cards = append([]pools.Card(nil), changed.Groups[0].Cards...)
	changed.Groups[0].Cards[1].Mode, changed.Groups[0].Cards[1].Remaining = workerv1.AllocationExclusive, 0
	chain.Set(changed)
	again, inv, err := chain.Flavors(ctx, s.settings)
	if err != nil {
		t.Fatal(err)
	}
	if again.Objects[0] != out.Objects[0] {
		t.Errorf("a ledger change ran the flavors function again; it reads identities only")
	}
	var got []string
	for _, it := range types {
		o, _, err := chain.InstanceType(ctx, ptr.To(s.spec(it)))
		if err != nil {
			t.Fatal(err)
		}
		if o.Objects[0] != first[it.Name].Objects[0] {
			got = append(got, it.Name)
		}
	}
	chain.Commit()
	// Only the pools that count the node's cards: its CPU pool reads its cores alone, which did not change.
	var want []string
	for _, it := range types {
		for _, f := range PoolFlavors(it.Spec, inv.Flavors) {
			if f.Accelerated() && slices.Contains(f.Nodes, changed.Name) {
				want = append(want, it.Name)
				break
			}
		}
	}
	if len(want) == 0 {
		t.Fatalf("no pool counts the cards of %s: the case tests nothing", changed.Name)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pools composed again after one card of %s was taken: -want, +got:\n%s", changed.Name, diff)
	}
}

// TestChainReadsTheClockWhereTheFunctionDoes checks that a pool's composition is kept across recomputes at
// other times only where the function does not read the time: a pool with no flavor left moves from holding
// to draining as its grace passes, whatever else stays the same.
func TestChainReadsTheClockWhereTheFunctionDoes(t *testing.T) {
	ctx := context.Background()
	since := metav1.NewTime(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC))
	gone := workerv1.InstanceTypeSpec{Acceleratable: true, AcceleratorGroup: "nvidia-b200", OS: "linux", Arch: "amd64"}
	chain := NewChain()
	for _, n := range busy(12) {
		chain.Set(n)
	}
	cases := []struct {
		reason string
		after  time.Duration
		want   workerv1.InstanceTypePhase
	}{
		{reason: "Just after the pool lost its flavors it holds.", after: 0, want: workerv1.InstanceTypeInactive},
		{reason: "Within its grace it still holds.", after: 4 * time.Minute, want: workerv1.InstanceTypeInactive},
		{reason: "Past its grace it drains, though nothing but the time changed.", after: 6 * time.Minute, want: workerv1.InstanceTypeDraining},
	}
	for _, tc := range cases {
		if _, _, err := chain.Flavors(ctx, xrs.DefaultFunctionSettings()); err != nil {
			t.Fatal(err)
		}
		_, st, err := chain.InstanceType(ctx, &xrs.InstanceTypePoolSpec{Name: "gone-pool", Type: gone, Settings: xrs.DefaultFunctionSettings(),
			Now: metav1.NewTime(since.Add(tc.after)), ReservingWorkloads: 1, NoFlavorsSince: &since})
		if err != nil {
			t.Fatal(err)
		}
		chain.Commit()
		if diff := cmp.Diff(tc.want, st.Phase); diff != "" {
			t.Errorf("%s\nChain.InstanceType(...) %s after: -want, +got:\n%s", tc.reason, tc.after, diff)
		}
	}
}
