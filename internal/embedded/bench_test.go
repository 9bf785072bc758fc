package embedded

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/functions/xrs"
	"github.com/gpustack/gpustack-operator/pools"
)

// products are twelve accelerator products of several vendors and sizes.
var products = []struct{ mfr, key, memory string }{
	{"nvidia", "nvidia-h100-80gb-hbm3", "80Gi"}, {"nvidia", "nvidia-a100-sxm4-40gb", "40Gi"},
	{"nvidia", "nvidia-a10g", "24Gi"}, {"nvidia", "nvidia-tesla-t4", "16Gi"}, {"nvidia", "nvidia-l40s", "48Gi"},
	{"nvidia", "nvidia-h200", "141Gi"}, {"amd", "amd-instinct-mi300x", "192Gi"}, {"ascend", "ascend-910b", "64Gi"},
	{"cambricon", "cambricon-mlu370-x8", "48Gi"}, {"hygon", "hygon-k100", "64Gi"}, {"metax", "metax-mxc500", "64Gi"},
	{"mthreads", "mthreads-mtt-s4000", "48Gi"},
}

var cpus = []string{"amd-epyc-7r13", "amd-epyc-9654", "intel-xeon-platinum-8259cl", "intel-xeon-platinum-8480c", "arm-neoverse-v2"}

// generated returns n nodes with eight cards each, of the twelve products, with some cards in use.
func generated(n int) []pools.Node {
	nodes := make([]pools.Node, n)
	for i := range nodes {
		p := products[i%len(products)]
		arch := "amd64"
		if i%10 == 9 {
			arch = "arm64"
		}
		cards := make([]pools.Card, 8)
		for c := range cards {
			cards[c] = pools.Card{ID: fmt.Sprintf("GPU-%d-%d", i, c), Remaining: pools.M, Slots: 16}
			if (i+c)%5 == 0 {
				cards[c].Mode, cards[c].Remaining, cards[c].AllocatedSlices = workerv1.AllocationSliced, pools.M/3, 2
			}
		}
		nodes[i] = pools.Node{
			Name: fmt.Sprintf("node-%05d", i), OS: "linux", Arch: arch, Managed: true,
			CPU:    pools.CPU{Key: cpus[i%len(cpus)], Manufacturer: "amd", Cores: int64(32 + 32*(i%4))},
			Groups: []pools.Group{{Key: p.key, Manufacturer: p.mfr, Product: p.key, Memory: p.memory, Count: 8, Cards: cards}},
		}
	}
	return nodes
}

// busy returns n generated nodes that all differ in CPU usage and slice usage: no two nodes share a class,
// the worst case for the requests' grouping.
func busy(n int) []pools.Node {
	nodes := generated(n)
	for i := range nodes {
		nodes[i].CPU.RequestedMilli = int64(i%997) * 7
		for c := range nodes[i].Groups[0].Cards {
			card := &nodes[i].Groups[0].Cards[c]
			if card.Mode == workerv1.AllocationSliced {
				card.Remaining = pools.M/2 + int64(i%1000)*100
			}
		}
	}
	return nodes
}

// recompute is the whole chain as the composer computes it at its start: a new Chain given every node, the
// flavors, then every derived InstanceType with its views. It returns how many types it composed.
func recompute(tb testing.TB, nodes []pools.Node) int {
	_, types, _ := composed(tb, nodes)
	return types
}

// composed gives a new Chain every node and composes it once, as the composer does at its start; it returns the
// Chain, how many types it composed and what recomputes it again (the flavors, every type, the commit).
func composed(tb testing.TB, nodes []pools.Node) (*Chain, int, func()) {
	ctx := context.Background()
	s := xrs.DefaultFunctionSettings()
	chain := NewChain()
	for _, n := range nodes {
		chain.Set(n)
	}
	out, _, err := chain.Flavors(ctx, s)
	if err != nil {
		tb.Fatal(err)
	}
	types := typesOf(tb, out)
	again := func() {
		if _, _, err := chain.Flavors(ctx, s); err != nil {
			tb.Fatal(err)
		}
		for _, it := range types {
			if _, _, err := chain.InstanceType(ctx, &xrs.InstanceTypePoolSpec{Name: it.Name, Type: it.Spec,
				Namespaces: []string{"default"}, Settings: s}); err != nil {
				tb.Fatal(err)
			}
		}
		chain.Commit()
	}
	again()
	return chain, len(types), again
}

// BenchmarkRecompute measures the full recompute: 5,000 nodes with 40,000 cards of 12 products, and ten
// times that to show how it scales; idle nodes fall in few classes, busy ones each in its own.
func BenchmarkRecompute(b *testing.B) {
	for _, n := range []int{500, 5000, 50000} {
		for load, make := range map[string]func(int) []pools.Node{"idle": generated, "busy": busy} {
			nodes := make(n)
			b.Run(fmt.Sprintf("nodes=%d/%s", n, load), func(b *testing.B) {
				b.ReportAllocs()
				types := 0
				for b.Loop() {
					types = recompute(b, nodes)
				}
				b.ReportMetric(float64(types), "types")
			})
		}
		b.Run(fmt.Sprintf("nodes=%d/one-node", n), func(b *testing.B) { benchmarkOneNode(b, busy(n)) })
	}
}

// benchmarkOneNode measures the recompute after one node's card was taken or given back, by a Chain that
// composed the nodes before: what a Devices update costs the embedded composer.
func benchmarkOneNode(b *testing.B, nodes []pools.Node) {
	types, change := oneNodeChanges(b, nodes)
	b.ReportAllocs()
	for b.Loop() {
		change()
	}
	b.ReportMetric(float64(types), "types")
}

// oneNodeChanges primes a Chain with the nodes and returns how many types it composes and what changes one node
// and recomputes, as the composer does after a Devices update: each call takes the second card of the next
// node, or gives it back.
func oneNodeChanges(tb testing.TB, nodes []pools.Node) (int, func()) {
	chain, types, recompute := composed(tb, nodes)
	i := 0
	return types, func() {
		n := nodes[i%len(nodes)]
		n.Groups = append([]pools.Group(nil), n.Groups...)
		n.Groups[0].Cards = append([]pools.Card(nil), n.Groups[0].Cards...)
		card := &n.Groups[0].Cards[1]
		if card.Remaining == pools.M {
			card.Mode, card.Remaining = workerv1.AllocationExclusive, 0
		} else {
			card.Mode, card.Remaining = workerv1.AllocationNone, pools.M
		}
		nodes[i%len(nodes)] = n
		chain.Set(n)
		recompute()
		i++
	}
}

// BenchmarkDomain measures the domain core alone, without the request and response encoding.
func BenchmarkDomain(b *testing.B) {
	nodes := generated(5000)
	byName := map[string]pools.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	b.ReportAllocs()
	for b.Loop() {
		flavors := pools.Flavors(nodes, true)
		catalog := pools.Catalog(flavors, false)
		for _, p := range pools.DerivedPools(catalog) {
			pools.PoolViews(p, flavors, byName)
		}
	}
}

// BenchmarkAggregate measures the worker-gateway's aggregation for 20 member clusters of 500 nodes each: every
// member shows the pools of the generated inventory, one InstanceType each with the views of its own
// recompute, and each name's 20 candidates are aggregated (a seventh of the members inactive).
func BenchmarkAggregate(b *testing.B) {
	const members = 20
	nodes := generated(500)
	byName := map[string]pools.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	flavors := pools.Flavors(nodes, true)
	candidates := map[string][]pools.Candidate{}
	for _, p := range pools.DerivedPools(pools.Catalog(flavors, false)) {
		v := pools.PoolViews(p, flavors, byName)
		for m := 0; m < members; m++ {
			candidates[p.Name()] = append(candidates[p.Name()], pools.Candidate{Cluster: fmt.Sprintf("member-%02d", m),
				Active: m%7 != 0, Accelerated: p.AcceleratorGroup != "", Views: v})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, cs := range candidates {
			pools.Aggregate(cs)
		}
	}
	b.ReportMetric(float64(len(candidates)), "types")
}

// TestRequestSize reports the size of the flavors function's request for 5,000 nodes as Flavors sends it
// (identities, no ledgers), which under Crossplane travels over gRPC with a 4 MiB default limit, and fails if it
// no longer fits.
func TestRequestSize(t *testing.T) {
	req, err := FlavorsRequest(xrs.Inventory(generated(5000), xrs.DefaultFunctionSettings()))
	if err != nil {
		t.Fatal(err)
	}
	size := proto.Size(req)
	t.Logf("flavors request for 5,000 nodes / 40,000 cards: %d bytes (%.2f MiB)", size, float64(size)/(1<<20))
	if size > 4<<20 {
		t.Errorf("the request is %d bytes, over gRPC's 4 MiB default", size)
	}
}
