package simulated

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/providers"
)

// Partitions is the simulated hardware's partitioning: what NVML's MIG calls do on a real card, kept in
// memory. A partition takes its profile's first free legal placement on the card (its memory slices from
// there) and is destroyed once its owner is gone, so a simulated node runs the device plugin's partitioned
// path through the same agent code as a real one. Nobody carves partitions by hand here, so there are no
// orphans to reuse.
type Partitions struct {
	mu    sync.Mutex
	cards map[string][]partition
	made  int
}

// partition is one GPU instance with its compute instance.
type partition struct {
	name, profile, owner string
	start, size          int32
}

// NewPartitions returns the partitioning of cards with none made yet.
func NewPartitions() *Partitions { return &Partitions{cards: map[string][]partition{}} }

// Create makes one partition of the profile on the card for owner at its first free placement and returns
// its device name (MIG-...).
func (s *Partitions) Create(_ context.Context, card providers.Device, profile, owner string) (string, error) {
	var p *providers.Partition
	for i := range card.Partitions {
		if card.Partitions[i].Name == profile {
			p = &card.Partitions[i]
		}
	}
	if p == nil {
		return "", errors.Errorf("card %s (%s) has no partition profile %s", card.UUID, card.Product, profile)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	existing := s.cards[card.UUID]
	var used uint64
	for _, e := range existing {
		used |= span(e.start, e.size)
	}
	for _, start := range p.Placements {
		if used&span(start, p.MemorySlices) != 0 {
			continue
		}
		s.made++
		h := sha256.Sum256(fmt.Appendf(nil, "%s/%d", card.UUID, s.made))
		name := fmt.Sprintf("MIG-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
		s.cards[card.UUID] = append(existing, partition{name: name, profile: profile, owner: owner, start: start, size: p.MemorySlices})
		return name, nil
	}
	return "", errors.Errorf("card %s has no free placement for a %s partition", card.UUID, profile)
}

// Reclaim destroys the card's partitions whose owner is not live.
func (s *Partitions) Reclaim(_ context.Context, card providers.Device, live func(owner string) bool) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var kept []partition
	for _, e := range s.cards[card.UUID] {
		if live(e.owner) {
			kept = append(kept, e)
		}
	}
	s.cards[card.UUID] = kept
	return nil
}

// Held returns the profiles of the card's partitions, in the order made.
func (s *Partitions) Held(card string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.cards[card] {
		out = append(out, e.profile)
	}
	return out
}

// span is the bit mask of size memory slices from start.
func span(start, size int32) uint64 {
	return ((uint64(1) << uint(size)) - 1) << uint(start)
}
