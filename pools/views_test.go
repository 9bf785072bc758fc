package pools

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// card builders for the ledger cases.
func free() Card { return Card{Remaining: M, Slots: 128} }

func sliced(percent int64, slices int32) Card {
	return Card{Mode: workerv1.AllocationSliced, Remaining: M - percent*sliceUnit, AllocatedSlices: slices, Slots: 128}
}

func shared(shares int64) Card {
	return Card{Mode: workerv1.AllocationShared, Remaining: M - shares*share, Slots: 128}
}

func exclusive() Card { return Card{Mode: workerv1.AllocationExclusive, Remaining: 0, Slots: 128} }

func partitioned(remaining ...int64) Card {
	c := Card{Mode: workerv1.AllocationPartitioned, Remaining: M}
	profiles := []string{"1g.10gb", "3g.40gb", "7g.80gb"}
	maxes := []int64{7, 2, 1}
	for i, r := range remaining {
		c.Partitions = append(c.Partitions, Partition{Profile: profiles[i], Max: maxes[i], Remaining: r})
	}
	return c
}

func TestPoolViews(t *testing.T) {
	pool := Pool{GeneralGroup: Generic, AcceleratorGroup: "nvidia-a10g", OS: "linux", Arch: "amd64"}
	node := func(name string, cards ...Card) Node {
		return Node{Name: name, OS: "linux", Arch: "amd64", Managed: true, CPU: CPU{Key: "amd-epyc-7r32", Cores: 4},
			Groups: []Group{{Key: "nvidia-a10g", Manufacturer: "nvidia", Count: int64(len(cards)), Cards: cards}}}
	}
	cases := map[string]struct {
		reason string
		nodes  []Node
		want   Views
	}{
		"Free": {
			reason: "One free A10G reads 1/1 1/10 100/100 0/0 (SH once-max counts cards).",
			nodes:  []Node{node("a", free())},
			want:   Views{Exclusive: View{1, 1, 1}, Shared: View{10, 1, 10}, Sliced: View{100, 100, 100}},
		},
		"SlicedTwenty": {
			reason: "A 20 % slice leaves EX and SH and takes 20 from SL (Step 3).",
			nodes:  []Node{node("a", sliced(20, 1))},
			want:   Views{Exclusive: View{1, 0, 0}, Shared: View{10, 0, 0}, Sliced: View{100, 80, 80}},
		},
		"Exclusive": {
			reason: "A whole card in use leaves every view.",
			nodes:  []Node{node("a", exclusive())},
			want:   Views{Exclusive: View{1, 0, 0}, Shared: View{10, 0, 0}, Sliced: View{100, 0, 0}},
		},
		"Shared": {
			reason: "Three shares taken leave seven, and the card still gives one.",
			nodes:  []Node{node("a", shared(3), free())},
			want:   Views{Exclusive: View{2, 1, 1}, Shared: View{20, 2, 17}, Sliced: View{200, 100, 100}},
		},
		"SlotsFull": {
			reason: "A card with every slice slot taken offers no slice, whatever memory it has left.",
			nodes:  []Node{node("a", Card{Mode: workerv1.AllocationSliced, Remaining: M / 2, AllocatedSlices: 128, Slots: 128})},
			want:   Views{Exclusive: View{1, 0, 0}, Shared: View{10, 0, 0}, Sliced: View{100, 0, 50}},
		},
		"TwoNodes": {
			reason: "Once-max of EX and SH is the largest node; SL the freest card.",
			nodes:  []Node{node("a", free()), node("b", free(), free(), sliced(60, 1), free())},
			want:   Views{Exclusive: View{5, 3, 4}, Shared: View{50, 3, 40}, Sliced: View{500, 100, 440}},
		},
		"Unhealthy": {
			reason: "An unhealthy card counts in capacity, never as free.",
			nodes:  []Node{node("a", Card{Remaining: M, Slots: 128, Unhealthy: true}, free())},
			want:   Views{Exclusive: View{2, 1, 1}, Shared: View{20, 1, 10}, Sliced: View{200, 100, 100}},
		},
		"Partitioned": {
			reason: "A partitioned card feeds PT only: its ceiling, its largest free count, once-max 1.",
			nodes:  []Node{node("a", partitioned(6, 1, 0), free())},
			want: Views{Exclusive: View{1, 1, 1}, Shared: View{10, 1, 10}, Sliced: View{100, 100, 100},
				Partitioned: View{7, 1, 6}, RemainingProfiles: map[string]int64{"1g.10gb": 6, "3g.40gb": 1, "7g.80gb": 0}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			byName := map[string]Node{}
			for _, n := range tc.nodes {
				byName[n.Name] = n
			}
			got := PoolViews(pool, Flavors(tc.nodes, true), byName)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nPoolViews(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCPUView(t *testing.T) {
	nodes := []Node{
		{Name: "cpu", OS: "linux", Arch: "amd64", Managed: true, CPU: CPU{Key: "amd-epyc-7r13", Cores: 16, RequestedMilli: 2600}},
		{Name: "big", OS: "linux", Arch: "amd64", Managed: true, CPU: CPU{Key: "intel-xeon", Cores: 48, RequestedMilli: 100}},
		{Name: "arm", OS: "linux", Arch: "arm64", Managed: true, CPU: CPU{Key: "arm-neoverse-n1", Cores: 64}},
		{Name: "off", OS: "linux", Arch: "amd64", Managed: false, CPU: CPU{Key: "intel-xeon", Cores: 96}},
	}
	byName := map[string]Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	got := PoolViews(Pool{GeneralGroup: Generic, OS: "linux", Arch: "amd64"}, Flavors(nodes, true), byName).CPU
	// 16 + 48 cores; 2.6 requested cores leave 13 cores to the nearest on the first node, 100m leaves the
	// second its 48; arm64 and unmanaged nodes are not in the pool.
	want := View{Capacity: 64, OnceMaxRequest: 48, Remaining: 61}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the generic linux/amd64 CPU pool\nPoolViews(...).CPU: -want, +got:\n%s", diff)
	}
}

func TestNodeFromLabels(t *testing.T) {
	base := func(extra map[string]string) map[string]string {
		l := map[string]string{workerv1.LabelOS: "linux", workerv1.LabelArch: "amd64", workerv1.LabelManaged: "true",
			workerv1.GeneralPrefix + "amd-epyc-7r32": "true", workerv1.GeneralPrefix + "amd-epyc-7r32.count": "4"}
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	type want struct {
		node Node
		err  string
	}
	cases := map[string]struct {
		reason string
		labels map[string]string
		want   want
	}{
		"A10G": {
			reason: "The seed's A10G node reads back its CPU and its card group.",
			labels: base(map[string]string{
				workerv1.AcceleratablePrefix + "nvidia": "true", workerv1.AcceleratablePrefix + "nvidia.driver-version": "580.159.03",
				workerv1.AcceleratablePrefix + "nvidia-a10g": "true", workerv1.AcceleratablePrefix + "nvidia-a10g.count": "1",
				workerv1.AcceleratablePrefix + "nvidia-a10g.memory": "24Gi", workerv1.AcceleratablePrefix + "nvidia-a10g.product": "NVIDIA-A10G",
			}),
			want: want{node: Node{Name: "n", OS: "linux", Arch: "amd64", Managed: true,
				CPU:    CPU{Key: "amd-epyc-7r32", Manufacturer: "amd", Cores: 4},
				Groups: []Group{{Key: "nvidia-a10g", Manufacturer: "nvidia", Product: "NVIDIA-A10G", Memory: "24Gi", Count: 1}}}},
		},
		"BadCores": {
			reason: "An unparsable core count is an error naming the label.",
			labels: base(map[string]string{workerv1.GeneralPrefix + "amd-epyc-7r32.count": "four"}),
			want:   want{err: `node n: label general.feature.gpustack.ai/amd-epyc-7r32.count="four" is not a core count`},
		},
		"NegativeCount": {
			reason: "A negative card count is an error naming the label.",
			labels: base(map[string]string{workerv1.AcceleratablePrefix + "nvidia-a10g.count": "-1"}),
			want:   want{err: `node n: label acceleratable.feature.gpustack.ai/nvidia-a10g.count="-1" is not a card count`},
		},
		"UnknownVendor": {
			reason: "An accelerator key of no known manufacturer is an error.",
			labels: base(map[string]string{workerv1.AcceleratablePrefix + "acme-x1.count": "2"}),
			want:   want{err: "node n: accelerator key acme-x1 names no known manufacturer"},
		},
		"NoPlatform": {
			reason: "A node without os and arch labels cannot be placed.",
			labels: map[string]string{},
			want:   want{err: "node n: labels kubernetes.io/os and kubernetes.io/arch are required"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n, err := NodeFromLabels("n", tc.labels, nil)
			got := want{}
			if err != nil {
				got.err = err.Error()
			} else {
				got.node = n
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nNodeFromLabels(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestForPoolKeepsViews checks that what a pool's request carries of each node (rounded CPU usage, card
// summaries) yields the same views as the nodes themselves.
func TestForPoolKeepsViews(t *testing.T) {
	var nodes []Node
	for i := 0; i < 40; i++ {
		cards := []Card{free(), sliced(int64(i%7)*10+5, int32(i%3)+1), shared(int64(i % 10)), exclusive(), partitioned(int64(i%8), 1, 0)}
		nodes = append(nodes, Node{Name: "n" + FormatCount(int64(i)), OS: "linux", Arch: "amd64", Managed: true,
			CPU:    CPU{Key: "amd-epyc-7r32", Cores: 8 + int64(i%3)*8, RequestedMilli: int64(i) * 333},
			Groups: []Group{{Key: "nvidia-a10g", Manufacturer: "nvidia", Count: int64(len(cards)), Cards: cards}}})
	}
	flavors := Flavors(nodes, true)
	for _, pool := range []Pool{
		{GeneralGroup: Generic, AcceleratorGroup: "nvidia-a10g", OS: "linux", Arch: "amd64"},
		{GeneralGroup: Generic, OS: "linux", Arch: "amd64"},
	} {
		raw, trimmed := map[string]Node{}, map[string]Node{}
		for _, n := range nodes {
			raw[n.Name] = n
		}
		for _, n := range Expand(Classify(forPool(nodes, pool))) {
			trimmed[n.Name] = n
		}
		if diff := cmp.Diff(PoolViews(pool, flavors, raw), PoolViews(pool, flavors, trimmed)); diff != "" {
			t.Errorf("pool %s: views from the trimmed nodes differ: -raw, +trimmed:\n%s", pool.Name(), diff)
		}
	}
}

func forPool(nodes []Node, p Pool) []Node {
	out := make([]Node, len(nodes))
	for i, n := range nodes {
		out[i] = n.ForPool(p)
	}
	return out
}
