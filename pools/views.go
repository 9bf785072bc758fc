package pools

// View is one capacity projection of a pool.
type View struct {
	Capacity       int64 `json:"capacity"`
	OnceMaxRequest int64 `json:"onceMaxRequest"`
	Remaining      int64 `json:"remaining"`
}

// Views are a pool's four accelerator projections and its CPU projection.
type Views struct {
	// Exclusive (EX) counts whole free cards; onceMax is the largest node's free cards.
	Exclusive View `json:"exclusive"`
	// Shared (SH) counts shares, ten per card; onceMax is the largest node's count of cards with a free share.
	Shared View `json:"shared"`
	// Sliced (SL) counts slice units, a hundred per card; onceMax is the freest card's free units.
	Sliced View `json:"sliced"`
	// Partitioned (PT) counts hardware partitions; onceMax is 1 when any card can host one.
	Partitioned View `json:"partitioned"`
	// RemainingProfiles are the partitions still possible, per profile, summed over the pool.
	RemainingProfiles map[string]int64 `json:"remainingProfiles,omitempty"`
	// CPU counts cores of a CPU pool; onceMax is the largest node's free cores.
	CPU View `json:"cpu"`
}

// share and sliceUnit are the credits of one share and one slice unit.
const (
	share     = M / 10
	sliceUnit = M / 100
)

// PoolViews projects the pool's views from its flavors and the nodes' ledgers. Each card feeds exactly one
// family: EX, SH and SL while it is not partitioned, PT while it is.
func PoolViews(pool Pool, flavors []Flavor, nodes map[string]Node) Views {
	var v Views
	seen := map[string]bool{}
	for _, f := range flavors {
		if !pool.Matches(f) {
			continue
		}
		for _, name := range f.Nodes {
			if seen[name] {
				continue
			}
			seen[name] = true
			if n, ok := nodes[name]; ok {
				v.addNode(pool, n)
			}
		}
	}
	return v
}

// MemberViews projects the views of a pool whose nodes are exactly members (the nodes of its flavors, each
// once): PoolViews without finding them through the flavors.
func MemberViews(pool Pool, members map[string]Node) Views {
	var v Views
	for _, n := range members {
		v.addNode(pool, n)
	}
	return v
}

// addNode adds one node of the pool: its cores to a CPU pool, its cards of the pool's group to an accelerated one.
func (v *Views) addNode(pool Pool, n Node) {
	if pool.AcceleratorGroup == "" {
		v.addCPU(n)
		return
	}
	for _, g := range n.Groups {
		if g.Key == pool.AcceleratorGroup {
			v.addGroup(g)
		}
	}
}

// FreeCores is a node's unrequested CPU to the nearest whole core: the 100m an accelerated Instance asks
// of an overcommitted node does not take a core out of the CPU pool, a request of 600m does.
func FreeCores(c CPU) int64 {
	return max(0, c.Cores*1000-c.RequestedMilli+500) / 1000
}

func (v *Views) addCPU(n Node) {
	free := FreeCores(n.CPU)
	v.CPU.Capacity += n.CPU.Cores
	v.CPU.Remaining += free
	v.CPU.OnceMaxRequest = max(v.CPU.OnceMaxRequest, free)
}

// CardSummary is what the views read of one node's cards of a group: a handful of counts instead of every
// card, which keeps a pool's function request small.
type CardSummary struct {
	// Cards are the unpartitioned cards; SliceableCards those of them that take soft slices.
	Cards          int64 `json:"cards,omitempty"`
	SliceableCards int64 `json:"sliceableCards,omitempty"`
	// FreeCards are whole free cards; ShareCards cards that can still give a share; Shares the free shares.
	FreeCards  int64 `json:"freeCards,omitempty"`
	ShareCards int64 `json:"shareCards,omitempty"`
	Shares     int64 `json:"shares,omitempty"`
	// SliceUnits are the free slice units; MaxSliceUnits those of the freest card with a free slot.
	SliceUnits    int64 `json:"sliceUnits,omitempty"`
	MaxSliceUnits int64 `json:"maxSliceUnits,omitempty"`
	// PartitionCapacity, PartitionsFree and PartitionAvailable describe the partitioned cards.
	PartitionCapacity  int64            `json:"partitionCapacity,omitempty"`
	PartitionsFree     int64            `json:"partitionsFree,omitempty"`
	PartitionAvailable bool             `json:"partitionAvailable,omitempty"`
	RemainingProfiles  map[string]int64 `json:"remainingProfiles,omitempty"`
}

// Summarize counts one node's cards for the views. Each card feeds exactly one family: EX, SH and SL while it
// is not partitioned, PT while it is.
func Summarize(cards []Card) CardSummary {
	var s CardSummary
	for _, c := range cards {
		if c.Partitioned() {
			s.addPartitioned(c)
			continue
		}
		s.Cards++
		if c.Slots > 0 {
			s.SliceableCards++
		}
		if c.Unhealthy {
			continue
		}
		if c.Mode == 0 && c.Remaining == M {
			s.FreeCards++
		}
		if c.Mode == 0 || c.Mode == 2 {
			s.Shares += c.Remaining / share
			if c.Remaining >= share {
				s.ShareCards++
			}
		}
		if c.Slots > 0 && (c.Mode == 0 || c.Mode == 3) {
			units := c.Remaining / sliceUnit
			s.SliceUnits += units
			if c.AllocatedSlices < c.Slots {
				s.MaxSliceUnits = max(s.MaxSliceUnits, units)
			}
		}
	}
	return s
}

func (s *CardSummary) addPartitioned(c Card) {
	var ceiling, free int64
	if s.RemainingProfiles == nil {
		s.RemainingProfiles = map[string]int64{}
	}
	for _, p := range c.Partitions {
		ceiling = max(ceiling, p.Max)
		remaining := p.Remaining
		if c.Unhealthy {
			remaining = 0
		}
		free = max(free, remaining)
		s.RemainingProfiles[p.Profile] += remaining
	}
	s.PartitionCapacity += ceiling
	s.PartitionsFree += free
	s.PartitionAvailable = s.PartitionAvailable || free > 0
}

// addGroup adds one node's cards of the pool's group: from its summary when the request carries one.
func (v *Views) addGroup(g Group) {
	s := g.Summary
	if s == nil {
		sum := Summarize(g.cards())
		s = &sum
	}
	v.Exclusive.Capacity += s.Cards
	v.Exclusive.Remaining += s.FreeCards
	v.Exclusive.OnceMaxRequest = max(v.Exclusive.OnceMaxRequest, s.FreeCards)
	v.Shared.Capacity += 10 * s.Cards
	v.Shared.Remaining += s.Shares
	v.Shared.OnceMaxRequest = max(v.Shared.OnceMaxRequest, s.ShareCards)
	v.Sliced.Capacity += 100 * s.SliceableCards
	v.Sliced.Remaining += s.SliceUnits
	v.Sliced.OnceMaxRequest = max(v.Sliced.OnceMaxRequest, s.MaxSliceUnits)
	v.Partitioned.Capacity += s.PartitionCapacity
	v.Partitioned.Remaining += s.PartitionsFree
	if s.PartitionAvailable {
		v.Partitioned.OnceMaxRequest = 1
	}
	for p, n := range s.RemainingProfiles {
		if v.RemainingProfiles == nil {
			v.RemainingProfiles = map[string]int64{}
		}
		v.RemainingProfiles[p] += n
	}
}
