package pools

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/vendors"
)

// M is the number of credits of one whole accelerator.
const M = workerv1.CreditsPerAccelerator

// Node is what the chain knows of one node: its platform, whether the operator manages it, its CPU and its
// accelerator groups with each card's ledger entry. It is the compact form the composition functions take, so
// a request for thousands of nodes stays small.
type Node struct {
	Name    string `json:"name"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	Managed bool   `json:"managed,omitempty"`
	CPU     CPU    `json:"cpu"`
	// Groups are the node's accelerator groups, sorted by key.
	Groups []Group `json:"groups,omitempty"`
}

// CPU is a node's processor.
type CPU struct {
	// Key is the gKey (amd-epyc-7r32), or generic.
	Key string `json:"key"`
	// Manufacturer is the lowercase CPU manufacturer (amd), or generic.
	Manufacturer string `json:"manufacturer,omitempty"`
	// Model is the CPU model name (AMD EPYC 7R32), when known.
	Model string `json:"model,omitempty"`
	// Cores is the number of cores the node offers.
	Cores int64 `json:"cores"`
	// RequestedMilli is the CPU the node's running Pods request, in millicores.
	RequestedMilli int64 `json:"requestedMilli,omitempty"`
}

// Group is the accelerators of one product on a node.
type Group struct {
	// Key is the aKey (nvidia-a10g).
	Key string `json:"key"`
	// Manufacturer is the vendor key (nvidia).
	Manufacturer string `json:"manufacturer"`
	// Product is the product label value (NVIDIA-A10G).
	Product string `json:"product,omitempty"`
	// Memory is one card's memory label value (24Gi).
	Memory string `json:"memory,omitempty"`
	// Cores is one card's compute cores.
	Cores string `json:"cores,omitempty"`
	// Family is the architecture family.
	Family string `json:"family,omitempty"`
	// Count is the number of cards.
	Count int64 `json:"count"`
	// Cards are the cards' ledger entries; when the ledger is not known yet every card counts as free.
	Cards []Card `json:"cards,omitempty"`
	// Summary, when set, stands for Cards in a pool's request: the counts the views read.
	Summary *CardSummary `json:"summary,omitempty"`
}

// Card is one card's state in the ledger.
type Card struct {
	ID              string                  `json:"id,omitempty"`
	Mode            workerv1.AllocationMode `json:"mode,omitempty"`
	Remaining       int64                   `json:"remaining"`
	AllocatedSlices int32                   `json:"allocatedSlices,omitempty"`
	// Slots is the number of soft slices the card holds; 0 when it cannot be sliced.
	Slots int32 `json:"slots,omitempty"`
	// Unhealthy cards count in capacity but are never free.
	Unhealthy bool `json:"unhealthy,omitempty"`
	// Partitions are the card's partition profiles while it is in a partitioning mode.
	Partitions []Partition `json:"partitions,omitempty"`
	// ResourceClaims are the ResourceClaims (namespace/name) the card is allocated to through DRA.
	ResourceClaims []string `json:"resourceClaims,omitempty"`
}

// Partition is one profile of a partitioned card: how many one empty card holds, how many the card holds now
// and how many it could still create.
type Partition struct {
	Profile   string `json:"profile"`
	Max       int64  `json:"max"`
	Remaining int64  `json:"remaining"`
	Allocated int64  `json:"allocated,omitempty"`
	// Size is the memory slices one partition takes and Starts its legal first slices; without them the
	// remaining counts are the ledger's and are not recomputed.
	Size   int32   `json:"size,omitempty"`
	Starts []int32 `json:"starts,omitempty"`
	// Units is what one partition costs in credits: its memory as a share of the card's, times M.
	Units int64 `json:"units,omitempty"`
}

// Partitioned reports whether the card is in a partitioning mode.
func (c Card) Partitioned() bool { return len(c.Partitions) > 0 }

// NodeFromLabels reads a node's profile from its labels, as NFD propagated them from the worker's and the
// device manager's NodeFeatures, and its CPU model from the gpustack-cpu-info annotation. A malformed label is
// an error naming the label; the caller reports it and leaves the node out.
func NodeFromLabels(name string, labels, annotations map[string]string) (Node, error) {
	n := Node{Name: name, OS: labels[workerv1.LabelOS], Arch: labels[workerv1.LabelArch], Managed: labels[workerv1.LabelManaged] == "true"}
	if n.OS == "" || n.Arch == "" {
		return n, errors.Errorf("node %s: labels %s and %s are required", name, workerv1.LabelOS, workerv1.LabelArch)
	}
	n.CPU = CPU{Key: Generic, Manufacturer: Generic, Model: annotations[workerv1.AnnotationCPUName]}
	groups := map[string]*Group{}
	for _, k := range sortedKeys(labels) {
		v := labels[k]
		switch {
		case strings.HasPrefix(k, workerv1.GeneralPrefix) && strings.HasSuffix(k, ".count"):
			cores, err := strconv.ParseInt(v, 10, 64)
			if err != nil || cores < 0 {
				return n, errors.Errorf("node %s: label %s=%q is not a core count", name, k, v)
			}
			n.CPU.Key, n.CPU.Cores = strings.TrimSuffix(strings.TrimPrefix(k, workerv1.GeneralPrefix), ".count"), cores
			n.CPU.Manufacturer = strings.SplitN(n.CPU.Key, "-", 2)[0]
		case strings.HasPrefix(k, workerv1.AcceleratablePrefix):
			key, attr, _ := strings.Cut(strings.TrimPrefix(k, workerv1.AcceleratablePrefix), ".")
			if attr == "" || attr == "driver-version" || attr == "runtime-version" || attr == "capacity" {
				continue
			}
			g := groups[key]
			if g == nil {
				g = &Group{Key: key, Manufacturer: ManufacturerOf(key)}
				groups[key] = g
			}
			switch attr {
			case "count":
				count, err := strconv.ParseInt(v, 10, 64)
				if err != nil || count < 0 {
					return n, errors.Errorf("node %s: label %s=%q is not a card count", name, k, v)
				}
				g.Count = count
			case "product":
				g.Product = v
			case "memory":
				g.Memory = v
			case "cores":
				g.Cores = v
			case "family":
				g.Family = v
			}
		}
	}
	for _, key := range sortedKeys(groups) {
		g := groups[key]
		if g.Manufacturer == "" {
			return n, errors.Errorf("node %s: accelerator key %s names no known manufacturer", name, key)
		}
		if g.Count > 0 {
			n.Groups = append(n.Groups, *g)
		}
	}
	return n, nil
}

// ManufacturerOf returns the vendor whose key prefixes an aKey, or "" when none does.
func ManufacturerOf(aKey string) string {
	for _, k := range vendors.Keys() {
		if aKey == k || strings.HasPrefix(aKey, k+"-") {
			return k
		}
	}
	return ""
}

// GroupID is the ID of an accelerator group in a Devices object: the aKey without its manufacturer.
func GroupID(manufacturer, aKey string) string {
	if id := strings.TrimPrefix(aKey, manufacturer+"-"); id != "" {
		return id
	}
	return aKey
}

// AttachLedger fills each group's cards from the node's Devices object: inventory from spec, allocation from
// status. Cards the status does not mention yet are free. Groups the Devices object does not know keep no
// cards, and count as that many free cards.
func (n *Node) AttachLedger(d *workerv1.Devices) {
	if d == nil {
		return
	}
	ledger := ledgerEntries(d)
	for i := range n.Groups {
		g := &n.Groups[i]
		for _, dg := range d.Spec.Groups {
			if dg.Manufacturer != g.Manufacturer || !IsGroup(dg, g.Key) {
				continue
			}
			g.Cards = g.Cards[:0]
			for _, a := range dg.Accelerators {
				g.Cards = append(g.Cards, ledgerCard(dg, a, ledger[dg.ID+"/"+a.ID]))
			}
		}
	}
}

// GroupKey returns the aKey of an inventory group as the device manager keyed it: the manufacturer and the
// group's ID (GroupID's inverse), which carries the memory suffix where the device manager was told to add one;
// the product's key for a group without an ID.
func GroupKey(dg workerv1.DeviceGroup) string {
	switch dg.ID {
	case "":
		return AcceleratorKey(dg.Manufacturer, dg.Name)
	case dg.Manufacturer:
		return dg.Manufacturer
	}
	return dg.Manufacturer + "-" + dg.ID
}

// IsGroup reports whether an inventory group is the cards of accelerator group aKey: by its product name, or
// by its ID where the product name is not known.
func IsGroup(dg workerv1.DeviceGroup, aKey string) bool {
	return AcceleratorKey(dg.Manufacturer, dg.Name) == aKey || GroupKey(dg) == aKey
}

// LedgerCards returns every card of a Devices object with its allocation, keyed by card ID.
func LedgerCards(d *workerv1.Devices) map[string]Card {
	ledger := ledgerEntries(d)
	out := map[string]Card{}
	for _, dg := range d.Spec.Groups {
		for _, a := range dg.Accelerators {
			out[a.ID] = ledgerCard(dg, a, ledger[dg.ID+"/"+a.ID])
		}
	}
	return out
}

// ledgerEntries indexes a Devices object's ledger by group and card ID.
func ledgerEntries(d *workerv1.Devices) map[string]*workerv1.AcceleratorAllocation {
	ledger := map[string]*workerv1.AcceleratorAllocation{}
	for _, g := range d.Status.Groups {
		for i := range g.Accelerators {
			ledger[g.ID+"/"+g.Accelerators[i].ID] = &g.Accelerators[i]
		}
	}
	return ledger
}

// ledgerCard is one card of group g's inventory with its ledger entry; a card without an entry is free.
func ledgerCard(g workerv1.DeviceGroup, a workerv1.Accelerator, l *workerv1.AcceleratorAllocation) Card {
	c := Card{ID: a.ID, Remaining: M, Unhealthy: a.Status.Unhealthy}
	if ls := a.Status.LogicalSliced; ls != nil {
		c.Slots = ls.Count
	}
	c.Partitions = partitionsFromSpec(a.Status.PhysicalSliced, g.Memory)
	if l == nil {
		return c
	}
	c.Mode, c.Remaining, c.AllocatedSlices, c.ResourceClaims = l.Mode, clamp(l.Remaining, 0, M), l.AllocatedSlices, l.ResourceClaims
	for j := range c.Partitions {
		for _, ap := range l.AllocatedProfiles {
			if c.Partitions[j].Profile == ap.Name {
				c.Partitions[j].Allocated = ap.Count
			}
		}
		for _, rp := range l.RemainingProfiles {
			if c.Partitions[j].Profile == rp.Name {
				c.Partitions[j].Remaining = rp.Count
			}
		}
	}
	recount(c.Partitions)
	return c
}

// cards returns the group's cards, or Count free cards when the ledger is unknown.
func (g Group) cards() []Card {
	if len(g.Cards) > 0 {
		return g.Cards
	}
	slots := int32(0)
	if v, ok := vendors.Lookup(g.Manufacturer); ok {
		slots = v.SlicesPerCard
	}
	out := make([]Card, g.Count)
	for i := range out {
		out[i] = Card{ID: strconv.Itoa(i), Remaining: M, Slots: slots}
	}
	return out
}

func clamp(v, lo, hi int64) int64 {
	return max(lo, min(v, hi))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Identity returns the node without its ledger and CPU usage: all the flavors function needs, so its request
// stays small (a node's eight cards would otherwise dominate it).
func (n Node) Identity() Node {
	out := n
	out.CPU.RequestedMilli = 0
	out.Groups = make([]Group, len(n.Groups))
	for i, g := range n.Groups {
		g.Cards = nil
		out.Groups[i] = g
	}
	return out
}

// ForPool returns what a pool's function call needs of the node: its name, cores and CPU usage, and the
// summary of its cards of the pool's accelerator group. The views read nothing else, and a
// pool's request stays small.
func (n Node) ForPool(p Pool) Node {
	// The views count whole free cores: rounding the usage to them lets nodes of equal free cores share a class.
	free := FreeCores(n.CPU)
	out := Node{Name: n.Name, Managed: n.Managed,
		CPU: CPU{Key: n.CPU.Key, Cores: n.CPU.Cores, RequestedMilli: n.CPU.Cores*1000 - free*1000}}
	if p.AcceleratorGroup == "" {
		return out
	}
	for _, g := range n.Groups {
		if g.Key != p.AcceleratorGroup {
			continue
		}
		summary := Summarize(g.cards())
		out.Groups = append(out.Groups, Group{Key: g.Key, Manufacturer: g.Manufacturer, Count: g.Count, Summary: &summary})
	}
	return out
}

// NodeClass is nodes that are alike but for their names: on a large cluster thousands of nodes fall in a few
// dozen classes, and a function's request carries each class once.
type NodeClass struct {
	// Identity is the class's node without a name.
	Identity Node `json:"identity"`
	// Names are the class's nodes, sorted.
	Names []string `json:"names"`
}

// Classify groups nodes that are alike but for their names into classes, ordered by their first node's name.
func Classify(nodes []Node) []NodeClass {
	index := map[string]int{}
	var out []NodeClass
	for _, n := range nodes {
		id := n
		id.Name = ""
		key, err := json.Marshal(id)
		if err != nil {
			continue // a Node always encodes; nothing to classify otherwise
		}
		i, ok := index[string(key)]
		if !ok {
			i = len(out)
			index[string(key)] = i
			out = append(out, NodeClass{Identity: id})
		}
		out[i].Names = append(out[i].Names, n.Name)
	}
	for i := range out {
		sort.Strings(out[i].Names)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Names[0] < out[j].Names[0] })
	return out
}

// Expand turns classes back into nodes, sorted by name. The names are sorted apart from the nodes: moving
// whole nodes about costs more than the sort at tens of thousands of them.
func Expand(classes []NodeClass) []Node {
	type ref struct {
		name  string
		class int
	}
	var refs []ref
	for i, c := range classes {
		for _, name := range c.Names {
			refs = append(refs, ref{name, i})
		}
	}
	slices.SortFunc(refs, func(a, b ref) int { return strings.Compare(a.name, b.name) })
	out := make([]Node, len(refs))
	for i, r := range refs {
		out[i] = classes[r.class].Identity
		out[i].Name = r.name
	}
	return out
}
