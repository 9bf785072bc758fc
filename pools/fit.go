package pools

import (
	"fmt"
	"sort"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// Family is the way a request uses cards.
type Family string

// The families a container can ask for.
const (
	FamilyExclusive Family = "exclusive"
	FamilyShared    Family = "shared"
	FamilySliced    Family = "sliced"
	// FamilyPartitioned asks hardware partitions of one profile (MIG).
	FamilyPartitioned Family = "partitioned"
)

// Demand is what one container asks of one node's cards of a group.
type Demand struct {
	// Family is how the cards are used.
	Family Family
	// Cards is the number of whole cards (exclusive) or of distinct cards with one share each (shared).
	Cards int64
	// Units is a slice's size in credits (a 20 % slice is 320,000); sliced only.
	Units int64
	// Profile is the partition profile (3g.40gb); partitioned only, with Cards the number of partitions.
	Profile string
}

// String says what the demand asks for, as people say it.
func (d Demand) String() string {
	switch d.Family {
	case FamilyExclusive:
		return fmt.Sprintf("%d whole card(s)", d.Cards)
	case FamilyShared:
		return fmt.Sprintf("a share on each of %d card(s)", d.Cards)
	case FamilySliced:
		return fmt.Sprintf("a slice of %s", percent(d.Units))
	case FamilyPartitioned:
		return fmt.Sprintf("%d %s partition(s)", max(d.Cards, 1), d.Profile)
	}
	return string(d.Family)
}

// Fit places a demand on one node's cards, the per-card check of the node-devices AdmissionCheck. Slices,
// shares and partitions go onto the fullest card that still has room, which keeps whole cards free; whole
// cards take free cards in index order; partitions only go on cards in a partitioning mode, the rest never. It returns the indexes of the chosen cards and the cards as they are after the
// placement, or, when the demand does not fit, a reason naming what was asked and the largest free piece.
// The cards passed in are not changed.
func Fit(cards []Card, d Demand) ([]int, []Card, error) {
	chosen, after, ok := fit(cards, d)
	if ok {
		return chosen, after, nil
	}
	return nil, nil, refusal(cards, d)
}

// fit is Fit without the reason: it allocates nothing when the demand does not fit, so a placement can try
// thousands of nodes and explain only the few it reports.
func fit(cards []Card, d Demand) ([]int, []Card, bool) {
	switch d.Family {
	case FamilyExclusive:
		want := int(max(d.Cards, 1))
		if countCards(cards, wholeCardFree) < want {
			return nil, nil, false
		}
		after := append([]Card(nil), cards...)
		chosen := make([]int, 0, want)
		for i, c := range cards {
			if len(chosen) < want && wholeCardFree(c) {
				chosen = append(chosen, i)
				after[i].Mode, after[i].Remaining = workerv1.AllocationExclusive, 0
			}
		}
		return chosen, after, true
	case FamilyShared:
		want := int(max(d.Cards, 1))
		if countCards(cards, shareFree) < want {
			return nil, nil, false
		}
		after := append([]Card(nil), cards...)
		chosen := fullestFirst(cards, shareFree)[:want]
		for _, i := range chosen {
			after[i].Mode, after[i].Remaining = workerv1.AllocationShared, after[i].Remaining-share
		}
		sort.Ints(chosen)
		return chosen, after, true
	case FamilySliced:
		if d.Units <= 0 || d.Units > M {
			return nil, nil, false
		}
		// The fullest card that still has room, the first of equals.
		best := -1
		for i, c := range cards {
			if sliceable(c) && c.Remaining >= d.Units && (best < 0 || c.Remaining < cards[best].Remaining) {
				best = i
			}
		}
		if best < 0 {
			return nil, nil, false
		}
		after := append([]Card(nil), cards...)
		after[best].Mode, after[best].Remaining = workerv1.AllocationSliced, after[best].Remaining-d.Units
		after[best].AllocatedSlices++
		return []int{best}, after, true
	case FamilyPartitioned:
		chosen, after, err := fitPartitions(cards, d)
		return chosen, after, err == nil
	}
	return nil, nil, false
}

// refusal says why a demand does not fit the cards: what was asked and the largest free piece.
func refusal(cards []Card, d Demand) error {
	switch d.Family {
	case FamilyExclusive:
		return errors.Errorf("not enough free cards for %s: %d free", d, countCards(cards, wholeCardFree))
	case FamilyShared:
		return errors.Errorf("not enough cards with a free share for %s: %d have one", d, countCards(cards, shareFree))
	case FamilySliced:
		if d.Units <= 0 || d.Units > M {
			return errors.Errorf("a slice must be more than nothing and at most one card, got %d credits", d.Units)
		}
		return errors.Errorf("no card has room for %s: the largest free piece is %s", d, percent(largestSlice(cards)))
	case FamilyPartitioned:
		_, _, err := fitPartitions(cards, d)
		return err
	}
	return errors.Errorf("cannot place a %q request: it is not a family of whole cards, shares, slices or partitions", d.Family)
}

// wholeCardFree reports whether a card can be taken whole: healthy, unpartitioned, unused.
func wholeCardFree(c Card) bool {
	return !c.Unhealthy && !c.Partitioned() && c.Mode == workerv1.AllocationNone && c.Remaining == M
}

// shareFree reports whether a card can take one more share.
func shareFree(c Card) bool {
	return !c.Unhealthy && !c.Partitioned() && (c.Mode == workerv1.AllocationNone || c.Mode == workerv1.AllocationShared) &&
		c.Remaining >= share
}

// sliceable reports whether a card can take one more slice of some size: healthy, unpartitioned, with a free
// slot, unused or sliced.
func sliceable(c Card) bool {
	return !c.Unhealthy && !c.Partitioned() && c.Slots > 0 && c.AllocatedSlices < c.Slots &&
		(c.Mode == workerv1.AllocationNone || c.Mode == workerv1.AllocationSliced)
}

// countCards counts the cards that pass ok.
func countCards(cards []Card, ok func(Card) bool) int {
	n := 0
	for _, c := range cards {
		if ok(c) {
			n++
		}
	}
	return n
}

// fullestFirst returns the indexes of the cards that pass ok, the fullest (least remaining) first and by
// index among equals.
func fullestFirst(cards []Card, ok func(Card) bool) []int {
	var out []int
	for i, c := range cards {
		if ok(c) {
			out = append(out, i)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return cards[out[a]].Remaining < cards[out[b]].Remaining })
	return out
}

// largestSlice is the largest slice any card could still take.
func largestSlice(cards []Card) int64 {
	var best int64
	for _, c := range cards {
		if sliceable(c) {
			best = max(best, c.Remaining)
		}
	}
	return best
}

// percent renders credits as a percentage of one card.
func percent(credits int64) string {
	if credits%sliceUnit == 0 {
		return fmt.Sprintf("%d%%", credits/sliceUnit)
	}
	return fmt.Sprintf("%.1f%%", float64(credits)/float64(sliceUnit))
}
