package pools

import (
	"sort"
)

// Candidate is one member cluster's InstanceType of a name, as the worker-gateway reads it.
type Candidate struct {
	// Cluster names the member cluster.
	Cluster string
	// Active is true when the member answers and its InstanceType's phase is Active; only active candidates
	// count toward availability.
	Active bool
	// Accelerated is true for an accelerated type; a CPU type is tiered and won on its CPU view.
	Accelerated bool
	// Views are the type's views as its status shows them.
	Views Views
}

// Tier is a group of active candidates whose deciding view (EX for an accelerated type, CPU for a CPU type)
// has the same onceMaxRequest.
type Tier struct {
	// OnceMaxRequest is the winner's onceMaxRequest of every view, copied as one bundle (the other fields are
	// zero), never a maximum taken view by view: a request that fits the bundle fits the winner's cluster.
	OnceMaxRequest Views `json:"onceMaxRequest"`
	// Winner is the cluster the bundle comes from.
	Winner string `json:"winner"`
	// Clusters are the tier's clusters, sorted.
	Clusters []string `json:"clusters"`
}

// Aggregated is one InstanceType across the member clusters (docs/multi-cluster.md, Aggregation).
type Aggregated struct {
	// Tiers are the active candidates by deciding onceMaxRequest, the largest first.
	Tiers []Tier `json:"tiers,omitempty"`
	// Views are each view's capacity and remaining summed over the active candidates (remaining profiles too),
	// with the first tier's onceMaxRequest bundle.
	Views Views `json:"views"`
	// Clusters are every member that has the type, sorted; Inactive those of them that do not count.
	Clusters []string `json:"clusters"`
	Inactive []string `json:"inactive,omitempty"`
}

// Aggregate builds one InstanceType's aggregate from its candidates, one per member cluster. Active candidates
// are grouped into tiers by the onceMaxRequest of the deciding view; a tier's bundle is copied from its winner,
// the candidate with the most remaining on that view (then the first cluster by name, so the answer does not
// depend on the order members are read in). Inactive members are listed and count nowhere.
func Aggregate(candidates []Candidate) Aggregated {
	sorted := append([]Candidate(nil), candidates...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Cluster < sorted[j].Cluster })
	var out Aggregated
	tiers := map[int64]*Tier{}
	winners := map[int64]Candidate{}
	for _, c := range sorted {
		out.Clusters = append(out.Clusters, c.Cluster)
		if !c.Active {
			out.Inactive = append(out.Inactive, c.Cluster)
			continue
		}
		out.Views.add(c.Views)
		key := deciding(c).OnceMaxRequest
		t := tiers[key]
		if t == nil {
			t = &Tier{}
			tiers[key] = t
		}
		t.Clusters = append(t.Clusters, c.Cluster)
		if w, ok := winners[key]; !ok || deciding(c).Remaining > deciding(w).Remaining {
			winners[key] = c
		}
	}
	keys := make([]int64, 0, len(tiers))
	for k := range tiers {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] > keys[j] })
	for _, k := range keys {
		t := tiers[k]
		t.Winner, t.OnceMaxRequest = winners[k].Cluster, onceMaxBundle(winners[k].Views)
		out.Tiers = append(out.Tiers, *t)
	}
	if len(out.Tiers) > 0 {
		top := out.Tiers[0].OnceMaxRequest
		out.Views.Exclusive.OnceMaxRequest, out.Views.Shared.OnceMaxRequest = top.Exclusive.OnceMaxRequest, top.Shared.OnceMaxRequest
		out.Views.Sliced.OnceMaxRequest, out.Views.Partitioned.OnceMaxRequest = top.Sliced.OnceMaxRequest, top.Partitioned.OnceMaxRequest
		out.Views.CPU.OnceMaxRequest = top.CPU.OnceMaxRequest
	}
	return out
}

// deciding is the view a candidate is tiered and won on.
func deciding(c Candidate) View {
	if c.Accelerated {
		return c.Views.Exclusive
	}
	return c.Views.CPU
}

// onceMaxBundle keeps the onceMaxRequest of every view and nothing else.
func onceMaxBundle(v Views) Views {
	keep := func(x View) View { return View{OnceMaxRequest: x.OnceMaxRequest} }
	return Views{Exclusive: keep(v.Exclusive), Shared: keep(v.Shared), Sliced: keep(v.Sliced),
		Partitioned: keep(v.Partitioned), CPU: keep(v.CPU)}
}

// add sums another pool's capacity, remaining and remaining profiles into v.
func (v *Views) add(o Views) {
	for _, p := range []struct {
		to   *View
		from View
	}{{&v.Exclusive, o.Exclusive}, {&v.Shared, o.Shared}, {&v.Sliced, o.Sliced}, {&v.Partitioned, o.Partitioned}, {&v.CPU, o.CPU}} {
		p.to.Capacity += p.from.Capacity
		p.to.Remaining += p.from.Remaining
	}
	for name, n := range o.RemainingProfiles {
		if v.RemainingProfiles == nil {
			v.RemainingProfiles = map[string]int64{}
		}
		v.RemainingProfiles[name] += n
	}
}
