package pools

import (
	"sort"
	"strconv"

	"github.com/gpustack/gpustack-operator/vendors"
)

// Flavor is one ResourceFlavor: the managed nodes that share a CPU key, an accelerator key (empty for a CPU
// flavor), os, arch and count (cores of a CPU flavor, cards of an accelerated one).
type Flavor struct {
	Name    string   `json:"name"`
	GKey    string   `json:"gKey"`
	AKey    string   `json:"aKey,omitempty"`
	OS      string   `json:"os"`
	Arch    string   `json:"arch"`
	Count   int64    `json:"count"`
	Nodes   []string `json:"nodes"`
	CPUOnly bool     `json:"cpuOnly,omitempty"`
	// Manufacturer is the accelerator manufacturer of an accelerated flavor.
	Manufacturer string `json:"manufacturer,omitempty"`
	// Hardware is what the flavor's nodes are made of, as its first node shows it.
	Hardware Hardware `json:"hardware"`
}

// Hardware describes a flavor's nodes: their CPU, and the cards of an accelerated flavor. A ResourceFlavor
// carries it as its note.gpustack.ai annotations (Notes), and the catalog entries are made of it.
type Hardware struct {
	// CPUManufacturer is the lowercase CPU manufacturer (amd), or generic.
	CPUManufacturer string `json:"cpuManufacturer,omitempty"`
	// CPUModel is the CPU model name (AMD EPYC 7R32), when known.
	CPUModel string `json:"cpuModel,omitempty"`
	// Product, Family, Memory and Cores describe one card of an accelerated flavor (NVIDIA-A10G, Ampere,
	// 24Gi, 10240), each when known.
	Product string `json:"product,omitempty"`
	Family  string `json:"family,omitempty"`
	Memory  string `json:"memory,omitempty"`
	Cores   string `json:"cores,omitempty"`
	// SlicesPerCard is the manufacturer's soft-slice count; 0 when cards cannot be sliced.
	SlicesPerCard int32 `json:"slicesPerCard,omitempty"`
	// CoresOvercommit says whether slice compute budgets may exceed 100 %.
	CoresOvercommit bool `json:"coresOvercommit,omitempty"`
}

// hardwareOf describes node n's CPU and, for an accelerated flavor, its cards of group aKey.
func hardwareOf(n Node, aKey string) Hardware {
	h := Hardware{CPUManufacturer: n.CPU.Manufacturer, CPUModel: n.CPU.Model}
	for _, g := range n.Groups {
		if aKey == "" || g.Key != aKey {
			continue
		}
		h.Product, h.Family, h.Memory, h.Cores = g.Product, g.Family, g.Memory, g.Cores
		if v, ok := vendors.Lookup(g.Manufacturer); ok {
			h.SlicesPerCard, h.CoresOvercommit = v.SlicesPerCard, v.CoresOvercommit
		}
	}
	return h
}

// Accelerated reports whether the flavor is a flavor of accelerators.
func (f Flavor) Accelerated() bool { return f.AKey != "" }

// Capacity is the flavor's pooled capacity: nodes x count.
func (f Flavor) Capacity() int64 { return int64(len(f.Nodes)) * f.Count }

// Flavors groups the managed nodes into ResourceFlavors at the finest grain, sorted by name. Every managed
// node yields a CPU flavor, unless mixedOnNode is false and it has accelerators; each of its accelerator
// groups yields an accelerated flavor. Settings never change this grain.
func Flavors(nodes []Node, mixedOnNode bool) []Flavor {
	// Flavors are found by their grain, not their name: formatting a name for every node costs more than the
	// rest at tens of thousands of them.
	type grain struct {
		gKey, aKey, os, arch string
		count                int64
	}
	byGrain := map[grain]*Flavor{}
	add := func(n Node, aKey, mfr string, count int64, cpuOnly bool) {
		g := grain{n.CPU.Key, aKey, n.OS, n.Arch, count}
		f := byGrain[g]
		if f == nil {
			f = &Flavor{Name: FlavorName(g.gKey, g.aKey, g.os, g.arch, g.count), GKey: n.CPU.Key, AKey: aKey, OS: n.OS, Arch: n.Arch, Count: count,
				Manufacturer: mfr, CPUOnly: cpuOnly, Hardware: hardwareOf(n, aKey)}
			byGrain[g] = f
		}
		f.Nodes = append(f.Nodes, n.Name)
	}
	for _, n := range nodes {
		if !n.Managed {
			continue
		}
		if n.CPU.Cores > 0 && (mixedOnNode || CPUOnly(n, mixedOnNode)) {
			add(n, "", "", n.CPU.Cores, CPUOnly(n, mixedOnNode))
		}
		for _, g := range n.Groups {
			if g.Count > 0 {
				add(n, g.Key, g.Manufacturer, g.Count, false)
			}
		}
	}
	out := make([]Flavor, 0, len(byGrain))
	for _, f := range byGrain {
		sort.Strings(f.Nodes)
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Pool identifies an InstanceType's pool: its general group (generic or a gKey), accelerator group (empty for
// a CPU pool), os and arch.
type Pool struct {
	GeneralGroup     string `json:"generalGroup"`
	AcceleratorGroup string `json:"acceleratorGroup,omitempty"`
	OS               string `json:"os"`
	Arch             string `json:"arch"`
}

// Name is the pool's InstanceType and ClusterQueue name.
func (p Pool) Name() string { return PoolName(p.GeneralGroup, p.AcceleratorGroup, p.OS, p.Arch) }

// Matches reports whether a flavor belongs to the pool.
func (p Pool) Matches(f Flavor) bool {
	general := p.GeneralGroup == "" || p.GeneralGroup == Generic || p.GeneralGroup == f.GKey
	return f.AKey == p.AcceleratorGroup && f.OS == p.OS && f.Arch == p.Arch && general
}

// CatalogEntry is one InstanceTypeFlavor: the hardware profile shared by the flavors of one grouping identity.
type CatalogEntry struct {
	Name             string `json:"name"`
	GeneralGroup     string `json:"generalGroup"`
	AcceleratorGroup string `json:"acceleratorGroup,omitempty"`
	Manufacturer     string `json:"manufacturer"`
	Product          string `json:"product,omitempty"`
	Family           string `json:"family,omitempty"`
	Memory           string `json:"memory,omitempty"`
	Cores            string `json:"cores,omitempty"`
	// SlicesPerCard is the manufacturer's soft-slice count; 0 when cards cannot be sliced.
	SlicesPerCard int32 `json:"slicesPerCard,omitempty"`
	// CoresOvercommit says whether slice compute budgets may exceed 100 %.
	CoresOvercommit bool `json:"coresOvercommit,omitempty"`
	// Platforms are the os/arch pairs the entry's flavors cover, sorted.
	Platforms []Platform `json:"platforms"`
}

// Platform is an os and arch.
type Platform struct {
	OS   string `json:"os"`
	Arch string `json:"arch"`
}

// Acceleratable reports whether the entry is an accelerator entry.
func (e CatalogEntry) Acceleratable() bool { return e.AcceleratorGroup != "" }

// Catalog groups the flavors' hardware into catalog entries: collapsed (generic CPU, one entry per
// accelerator) while CPU awareness is off, split by gKey while it is on. Entries are sorted by name; an entry
// is described by the first of its flavors.
func Catalog(flavors []Flavor, aware bool) []CatalogEntry {
	entries := map[string]*CatalogEntry{}
	for _, f := range flavors {
		general := Generic
		if aware {
			general = f.GKey
		}
		if f.Accelerated() && !aware {
			general = ""
		}
		name := CatalogName(general, f.AKey)
		e := entries[name]
		if e == nil {
			e = &CatalogEntry{Name: name, GeneralGroup: general, AcceleratorGroup: f.AKey}
			describe(e, f)
			entries[name] = e
		}
		e.addPlatform(Platform{OS: f.OS, Arch: f.Arch})
	}
	out := make([]CatalogEntry, 0, len(entries))
	for _, name := range sortedKeys(entries) {
		out = append(out, *entries[name])
	}
	return out
}

// describe fills an entry's hardware descriptors from one of its flavors.
func describe(e *CatalogEntry, f Flavor) {
	h := f.Hardware
	if !f.Accelerated() {
		e.Manufacturer = Generic
		if e.GeneralGroup != Generic {
			e.Manufacturer, e.Product = h.CPUManufacturer, h.CPUModel
		}
		return
	}
	e.Manufacturer, e.Product, e.Family, e.Memory, e.Cores = f.Manufacturer, h.Product, h.Family, h.Memory, h.Cores
	e.SlicesPerCard, e.CoresOvercommit = h.SlicesPerCard, h.CoresOvercommit
}

func (e *CatalogEntry) addPlatform(p Platform) {
	for _, q := range e.Platforms {
		if q == p {
			return
		}
	}
	e.Platforms = append(e.Platforms, p)
	sort.Slice(e.Platforms, func(i, j int) bool {
		if e.Platforms[i].OS != e.Platforms[j].OS {
			return e.Platforms[i].OS < e.Platforms[j].OS
		}
		return e.Platforms[i].Arch < e.Platforms[j].Arch
	})
}

// DerivedPools returns the pools the operator derives from the catalog: one per entry and platform, named
// by PoolName. Derivation is create-only: the caller creates the missing ones and never updates or deletes.
func DerivedPools(catalog []CatalogEntry) []Pool {
	var out []Pool
	for _, e := range catalog {
		general := e.GeneralGroup
		if general == "" {
			general = Generic
		}
		for _, p := range e.Platforms {
			out = append(out, Pool{GeneralGroup: general, AcceleratorGroup: e.AcceleratorGroup, OS: p.OS, Arch: p.Arch})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// FormatCount renders a count as a label value.
func FormatCount(n int64) string { return strconv.FormatInt(n, 10) }
