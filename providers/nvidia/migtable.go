package nvidia

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpustack/gpustack-operator/providers"
)

// migProduct is the MIG geometry of one MIG-capable product: its memory slices and its nominal memory, from
// which NVIDIA names every profile (<compute>g.<memory>gb).
type migProduct struct {
	// match is a piece of the name the driver reports (NVIDIA H100 80GB HBM3 -> "H100 80GB").
	match []string
	// slices is the number of memory slices: 8 on the 7-compute-slice parts, 4 on A30.
	slices int32
	// gb is the nominal memory the profile names divide.
	gb float64
}

// migProducts are the MIG-capable products, longest match first so H100 NVL is not read as H100.
var migProducts = []migProduct{
	{match: []string{"GH200 144G", "GH200 144GB"}, slices: 8, gb: 144},
	{match: []string{"GH200"}, slices: 8, gb: 96},
	{match: []string{"H100 NVL", "H100 94GB", "H100-94GB"}, slices: 8, gb: 94},
	{match: []string{"H100"}, slices: 8, gb: 80},
	{match: []string{"H200"}, slices: 8, gb: 141},
	{match: []string{"H20"}, slices: 8, gb: 96},
	{match: []string{"B200"}, slices: 8, gb: 180},
	{match: []string{"A100-SXM4-40GB", "A100-PCIE-40GB", "A100 40GB"}, slices: 8, gb: 40},
	{match: []string{"A100"}, slices: 8, gb: 80},
	{match: []string{"A30"}, slices: 4, gb: 24},
}

// migShape is one GPU-instance profile in memory slices: its compute slices, its memory slices and its legal
// starts. The media-extension (+me) and graphics (+gfx) variants are left out, as the operator never offers them.
type migShape struct {
	compute int32
	memory  int32
	starts  []int32
}

// migShapes are the profiles of each geometry, as NVIDIA's MIG user guide lists them.
var migShapes = map[int32][]migShape{
	8: {
		{compute: 1, memory: 1, starts: []int32{0, 1, 2, 3, 4, 5, 6}},
		{compute: 1, memory: 2, starts: []int32{0, 2, 4, 6}},
		{compute: 2, memory: 2, starts: []int32{0, 2, 4}},
		{compute: 3, memory: 4, starts: []int32{0, 4}},
		{compute: 4, memory: 4, starts: []int32{0}},
		{compute: 7, memory: 8, starts: []int32{0}},
	},
	4: {
		{compute: 1, memory: 1, starts: []int32{0, 1, 2, 3}},
		{compute: 2, memory: 2, starts: []int32{0, 2}},
		{compute: 4, memory: 4, starts: []int32{0}},
	},
}

// ProductProfiles returns the MIG profiles of a product as the driver names it, in the order of the MIG user
// guide (smallest first), with the number one empty card holds and their legal starts; ok is false for a
// product that has no MIG. It is what a card in MIG mode reports, for the simulated cluster and for checks.
func ProductProfiles(product string) ([]providers.Partition, bool) {
	p, ok := lookupMIGProduct(product)
	if !ok {
		return nil, false
	}
	var out []providers.Partition
	for _, s := range migShapes[p.slices] {
		gb := p.gb * float64(s.memory) / float64(p.slices)
		out = append(out, providers.Partition{
			Name:          fmt.Sprintf("%dg.%dgb", s.compute, int64(math.Floor(gb+0.5))),
			MemoryMiB:     int64(gb * 1024),
			ComputeSlices: s.compute,
			MemorySlices:  s.memory,
			Count:         int32(len(disjoint(s))),
			Placements:    append([]int32(nil), s.starts...),
		})
	}
	return out, true
}

// MIGProducts lists the products ProductProfiles knows, for messages.
func MIGProducts() []string {
	var out []string
	for _, p := range migProducts {
		out = append(out, p.match[0])
	}
	return out
}

func lookupMIGProduct(product string) (migProduct, bool) {
	name := strings.ToUpper(product)
	for _, p := range migProducts {
		for _, m := range p.match {
			if strings.Contains(name, strings.ToUpper(m)) {
				return p, true
			}
		}
	}
	return migProduct{}, false
}

// disjoint returns the starts an empty card can hold at once: each next start that does not overlap the last.
func disjoint(s migShape) []int32 {
	var out []int32
	next := int32(0)
	for _, st := range s.starts {
		if st >= next {
			out = append(out, st)
			next = st + s.memory
		}
	}
	return out
}
