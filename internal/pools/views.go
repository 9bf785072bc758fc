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
			n, ok := nodes[name]
			if !ok {
				continue
			}
			if !f.Accelerated() {
				v.addCPU(n)
				continue
			}
			for _, g := range n.Groups {
				if g.Key == f.AKey {
					v.addCards(g.cards())
				}
			}
		}
	}
	return v
}

func (v *Views) addCPU(n Node) {
	free := max(0, n.CPU.Cores*1000-n.CPU.RequestedMilli) / 1000
	v.CPU.Capacity += n.CPU.Cores
	v.CPU.Remaining += free
	v.CPU.OnceMaxRequest = max(v.CPU.OnceMaxRequest, free)
}

// addCards adds one node's cards of the pool's group.
func (v *Views) addCards(cards []Card) {
	var freeCards, shareCards int64
	for _, c := range cards {
		if c.Partitioned() {
			v.addPartitioned(c)
			continue
		}
		v.Exclusive.Capacity++
		v.Shared.Capacity += 10
		if c.Slots > 0 {
			v.Sliced.Capacity += 100
		}
		if c.Unhealthy {
			continue
		}
		if c.Mode == 0 && c.Remaining == M {
			freeCards++
		}
		if c.Mode == 0 || c.Mode == 2 {
			v.Shared.Remaining += c.Remaining / share
			if c.Remaining >= share {
				shareCards++
			}
		}
		if c.Slots > 0 && (c.Mode == 0 || c.Mode == 3) {
			units := c.Remaining / sliceUnit
			v.Sliced.Remaining += units
			if c.AllocatedSlices < c.Slots {
				v.Sliced.OnceMaxRequest = max(v.Sliced.OnceMaxRequest, units)
			}
		}
	}
	v.Exclusive.Remaining += freeCards
	v.Exclusive.OnceMaxRequest = max(v.Exclusive.OnceMaxRequest, freeCards)
	v.Shared.OnceMaxRequest = max(v.Shared.OnceMaxRequest, shareCards)
}

func (v *Views) addPartitioned(c Card) {
	var ceiling, free int64
	for _, p := range c.Partitions {
		ceiling = max(ceiling, p.Max)
		if !c.Unhealthy {
			free = max(free, p.Remaining)
		}
	}
	v.Partitioned.Capacity += ceiling
	v.Partitioned.Remaining += free
	if free > 0 {
		v.Partitioned.OnceMaxRequest = 1
	}
	if v.RemainingProfiles == nil {
		v.RemainingProfiles = map[string]int64{}
	}
	for _, p := range c.Partitions {
		if c.Unhealthy {
			v.RemainingProfiles[p.Profile] += 0
			continue
		}
		v.RemainingProfiles[p.Profile] += p.Remaining
	}
}
