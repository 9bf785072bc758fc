package pools

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/vendors"
)

// A partitioned card is modelled as the hardware lays it out: a row of memory slices (8 on an H100), each
// profile taking Size slices at one of its legal starts. How many more partitions of a profile a card can
// take depends on where the ones it holds sit, so the remaining counts are recomputed from the partitions
// held, placed largest first, each at its first free legal start. The device manager creates each partition at
// its first free start too, so the two agree as long as partitions come and go in the same order; where they
// differ (a small partition freed below a large one) the card may hold more than the ledger says, never less.

// partitionsFromSpec returns a card's profiles as its inventory lists them, with what one partition of each
// costs in credits on a card of cardMiB memory.
func partitionsFromSpec(ps *workerv1.PhysicalSlicedCapability, cardMiB int64) []Partition {
	if ps == nil {
		return nil
	}
	out := make([]Partition, 0, len(ps.Profiles))
	for _, p := range ps.Profiles {
		units := M
		if cardMiB > 0 && p.MemoryMiB > 0 {
			units = min(M, p.MemoryMiB*M/cardMiB)
		}
		out = append(out, Partition{Profile: p.Name, Max: int64(p.Count), Remaining: int64(p.Count),
			Size: p.MemorySlices, Starts: p.Placements, Units: units})
	}
	return out
}

// placeable reports whether the card knows its profiles' geometry, so its remaining counts can be computed.
func placeable(ps []Partition) bool {
	for _, p := range ps {
		if p.Size <= 0 || len(p.Starts) == 0 {
			return false
		}
	}
	return len(ps) > 0
}

// layout places the partitions a card holds, largest first (of equal sizes the one with fewer legal starts
// first: a 4g.40gb, only at slice 0, before a 3g.40gb, at 0 or 4) and each at its first free legal start, and
// returns the memory slices they occupy. ok is false when they cannot all be placed.
func layout(ps []Partition) (used uint64, ok bool) {
	order := make([]int, 0, len(ps))
	for i := range ps {
		order = append(order, i)
	}
	sort.SliceStable(order, func(a, b int) bool {
		pa, pb := ps[order[a]], ps[order[b]]
		if pa.Size != pb.Size {
			return pa.Size > pb.Size
		}
		return len(pa.Starts) < len(pb.Starts)
	})
	ok = true
	for _, i := range order {
		for n := int64(0); n < ps[i].Allocated; n++ {
			start, found := firstFree(used, ps[i])
			if !found {
				ok = false
				break
			}
			used |= span(start, ps[i].Size)
		}
	}
	return used, ok
}

// firstFree returns the first legal start of the profile whose slices are all free.
func firstFree(used uint64, p Partition) (int32, bool) {
	for _, s := range p.Starts {
		if s >= 0 && s+p.Size <= 64 && used&span(s, p.Size) == 0 {
			return s, true
		}
	}
	return 0, false
}

// span is the bit mask of size slices from start.
func span(start, size int32) uint64 {
	if size >= 64 {
		return ^uint64(0)
	}
	return ((uint64(1) << uint(size)) - 1) << uint(start)
}

// freeCount is how many more partitions of the profile fit in the free slices, each at its first free start.
func freeCount(used uint64, p Partition) int64 {
	var n int64
	for {
		s, ok := firstFree(used, p)
		if !ok {
			return n
		}
		used |= span(s, p.Size)
		n++
	}
}

// recount sets each profile's remaining count from the partitions the card holds. A card whose geometry is
// not known keeps the counts it has.
func recount(ps []Partition) {
	if !placeable(ps) {
		return
	}
	used, ok := layout(ps)
	for i := range ps {
		if !ok {
			ps[i].Remaining = 0
			continue
		}
		ps[i].Remaining = freeCount(used, ps[i])
	}
}

// withPartition returns the card holding one more partition of the profile.
func withPartition(c Card, profile string) Card {
	c.Partitions = append([]Partition(nil), c.Partitions...)
	for i := range c.Partitions {
		if c.Partitions[i].Profile != profile {
			continue
		}
		c.Partitions[i].Allocated++
		c.Remaining = max(0, c.Remaining-c.Partitions[i].Units)
		if !placeable(c.Partitions) {
			c.Partitions[i].Remaining = max(0, c.Partitions[i].Remaining-1)
		}
	}
	recount(c.Partitions)
	c.Mode = workerv1.AllocationPartitioned
	return c
}

// freeOf is how many partitions of the profile the card can still take; 0 when it does not offer it.
func (c Card) freeOf(profile string) int64 {
	if c.Unhealthy {
		return 0
	}
	for _, p := range c.Partitions {
		if p.Profile == profile {
			return p.Remaining
		}
	}
	return 0
}

// fitPartitions places d.Cards partitions of d.Profile one by one, each on the fullest partitioned card that
// still has a free placement for it (the least credits remaining, then the lowest index).
func fitPartitions(cards []Card, d Demand) ([]int, []Card, error) {
	if d.Profile == "" {
		return nil, nil, errors.New("a partition request must name its profile")
	}
	after := append([]Card(nil), cards...)
	var chosen []int
	for n := int64(0); n < max(d.Cards, 1); n++ {
		best := -1
		for i, c := range after {
			if c.freeOf(d.Profile) > 0 && (best < 0 || c.Remaining < after[best].Remaining) {
				best = i
			}
		}
		if best < 0 {
			return nil, nil, errors.Errorf("no card has a free placement for %s: %s", d, freePartitions(after))
		}
		after[best] = withPartition(after[best], d.Profile)
		if !slices.Contains(chosen, best) {
			chosen = append(chosen, best)
		}
	}
	sort.Ints(chosen)
	return chosen, after, nil
}

// freePartitions says what the cards could still take, per profile, for a refusal's message.
func freePartitions(cards []Card) string {
	free := map[string]int64{}
	var names []string
	for _, c := range cards {
		for _, p := range c.Partitions {
			if _, seen := free[p.Profile]; !seen {
				names = append(names, p.Profile)
			}
			free[p.Profile] += c.freeOf(p.Profile)
		}
	}
	if len(names) == 0 {
		return "the node has no card in a partitioning mode"
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, free[n])
	}
	return "free placements " + strings.Join(parts, ", ")
}

// PartitionTokens is what a partitioned card offers the <base>.partitioned pool: the partitions it holds plus
// the most of any one profile it could still make. Eight H100s with one 3g.40gb held offer 7×7 + 1 + 3 = 53.
func PartitionTokens(c Card) int64 {
	var held, most int64
	for _, p := range c.Partitions {
		held += p.Allocated
		most = max(most, p.Remaining)
	}
	return held + most
}

// PartitionCounting returns the Node capacity of the counting keys a node's partitioned cards give, keyed by
// resource name: per vendor with a partitioning kind, <base>.partitioned.units (healthy partitioned cards ×
// M) and, per profile, <base>.partitioned.<kind>-<profile> = the partitions held plus those still possible.
// With one 3g.40gb held on eight H100s the 1g.10gb key is 52, not 56: the kubelet then refuses what no
// placement is left for.
func PartitionCounting(d *workerv1.Devices) map[string]int64 {
	out := map[string]int64{}
	cards := LedgerCards(d)
	for _, g := range d.Spec.Groups {
		v, ok := vendors.Lookup(g.Manufacturer)
		if !ok || v.PartitionKind == "" {
			continue
		}
		for _, a := range g.Accelerators {
			c := cards[a.ID]
			if !c.Partitioned() || c.Unhealthy {
				continue
			}
			out[v.ResourceName+".partitioned.units"] += M
			for _, p := range c.Partitions {
				out[v.ProfilePrefix()+p.Profile] += p.Allocated + p.Remaining
			}
		}
	}
	return out
}
