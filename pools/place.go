package pools

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// NodeCards are one node's cards as its ledger stands, by manufacturer.
type NodeCards struct {
	Name  string
	Cards map[string][]Card
	// Inventory is the node's Devices object the cards are of, in its groups' order: its accelerators' indexes
	// name their DRA devices (DRADevice). Nil where it is not known, and then no card matches a selector.
	Inventory *workerv1.Devices
}

// DeviceSelector reports whether the DRA device of a manufacturer's card on a node (the device's name,
// DRADevice) matches every one of selectors, CEL expressions over the device's attributes and capacity as its
// driver publishes them.
type DeviceSelector func(node, manufacturer, device string, selectors []string) bool

// NodeCardsOf returns a node's cards with the ledger rebuilt from the claims of the Pods bound to it.
func NodeCardsOf(d *workerv1.Devices, bound []Claim) NodeCards {
	st, _, _ := Ledger(d, bound)
	charged := d.DeepCopy()
	charged.Status = st
	byID := LedgerCards(charged)
	out := NodeCards{Name: d.Name, Cards: map[string][]Card{}, Inventory: d}
	for _, g := range d.Spec.Groups {
		for _, a := range g.Accelerators {
			out.Cards[g.Manufacturer] = append(out.Cards[g.Manufacturer], byID[a.ID])
		}
	}
	return out
}

// devices names the DRA devices of the manufacturer's cards, in the order of Cards.
func (n NodeCards) devices(manufacturer string) []string {
	if n.Inventory == nil {
		return nil
	}
	var out []string
	for _, g := range n.Inventory.Spec.Groups {
		if g.Manufacturer != manufacturer {
			continue
		}
		for _, a := range g.Accelerators {
			out = append(out, DRADevice(a.Index))
		}
	}
	return out
}

// cardsFor returns the manufacturer's cards a claim may take: all of them, or, for a claim with selectors where
// selects can tell, the cards that match them with the others shown as never free (unhealthy). mask says which
// cards match, nil when all may be taken.
func (n NodeCards) cardsFor(c Claim, selects DeviceSelector) (cards []Card, mask []bool) {
	cards = n.Cards[c.Manufacturer]
	if len(c.Selectors) == 0 || selects == nil {
		return cards, nil
	}
	devices := n.devices(c.Manufacturer)
	masked := append([]Card(nil), cards...)
	mask = make([]bool, len(cards))
	for i := range masked {
		mask[i] = i < len(devices) && selects(n.Name, c.Manufacturer, devices[i], c.Selectors)
		if !mask[i] {
			masked[i].Unhealthy = true
		}
	}
	return masked, mask
}

// unmasked returns the cards after a placement on the masked ones: the matching cards as the placement left
// them, the others as they were.
func unmasked(cards, after []Card, mask []bool) []Card {
	if mask == nil {
		return after
	}
	out := append([]Card(nil), cards...)
	for i, m := range mask {
		if m {
			out[i] = after[i]
		}
	}
	return out
}

// Place puts all of one workload's claims on the first node that takes them, and returns that node's name
// and the nodes as they are after it. When no node takes them it returns the reasons of the first nodes, in
// their order (maxReasons of them, then how many more refused). The nodes passed in are not changed.
func Place(nodes []NodeCards, claims []Claim) (string, []NodeCards, error) {
	i, trial, ok := placeFirst(nodes, claims, nil)
	if !ok {
		return "", nil, noNodeTakes(nodes, claims, nil)
	}
	out := append([]NodeCards(nil), nodes...)
	out[i] = trial
	return trial.Name, out, nil
}

// maxReasons is how many nodes' reasons a refusal names: a flavor of thousands of full nodes would otherwise
// write a Workload's status message of megabytes.
const maxReasons = 5

// placeFirst returns the index of the first node that takes the claims and that node after them; ok is false
// when none does.
func placeFirst(nodes []NodeCards, claims []Claim, selects DeviceSelector) (int, NodeCards, bool) {
	for i, n := range nodes {
		if trial, ok := placeOnNode(n, claims, selects); ok {
			return i, trial, true
		}
	}
	return -1, NodeCards{}, false
}

// noNodeTakes says why no node takes the claims: the reasons of the first nodes, in their order.
func noNodeTakes(nodes []NodeCards, claims []Claim, selects DeviceSelector) error {
	if len(nodes) == 0 {
		return errors.New("no node serves the assigned flavor")
	}
	var reasons []string
	for _, n := range nodes[:min(len(nodes), maxReasons)] {
		reasons = append(reasons, fmt.Sprintf("%s: %v", n.Name, whyNot(n, claims, selects)))
	}
	if more := len(nodes) - len(reasons); more > 0 {
		reasons = append(reasons, fmt.Sprintf("%d more node(s) have no room either", more))
	}
	return errors.Errorf("%s", strings.Join(reasons, "; "))
}

// placeOnNode puts all the claims on one node and returns the node after them, ok false when one does not
// fit. Only the manufacturers' cards it changes are copied.
func placeOnNode(n NodeCards, claims []Claim, selects DeviceSelector) (NodeCards, bool) {
	trial := n
	copied := false
	for _, c := range claims {
		cards, mask := trial.cardsFor(c, selects)
		_, after, ok := fit(cards, c.Demand)
		if !ok {
			return NodeCards{}, false
		}
		if !copied {
			trial.Cards = maps.Clone(n.Cards)
			copied = true
		}
		trial.Cards[c.Manufacturer] = unmasked(trial.Cards[c.Manufacturer], after, mask)
	}
	return trial, true
}

// whyNot returns the reason the first claim that does not fit the node gives, after the claims before it.
func whyNot(n NodeCards, claims []Claim, selects DeviceSelector) error {
	trial := n
	trial.Cards = maps.Clone(n.Cards)
	for _, c := range claims {
		cards, mask := trial.cardsFor(c, selects)
		if mask != nil && !slices.Contains(mask, true) {
			return errors.Errorf("no %s card matches the selectors of %s (%s)", c.Manufacturer, c.Key, strings.Join(c.Selectors, " && "))
		}
		_, after, err := Fit(cards, c.Demand)
		if err != nil && mask != nil {
			return errors.Wrapf(err, "on the %s cards that match the selectors of %s", c.Manufacturer, c.Key)
		}
		if err != nil {
			return err
		}
		trial.Cards[c.Manufacturer] = unmasked(trial.Cards[c.Manufacturer], after, mask)
	}
	return errors.New("it fits")
}

// PlacePods places a workload's Pods in turn, each Pod's claims on one node (its containers share a node) and
// each Pod on whichever node takes it after the Pods before, so a workload of several Pods spreads over the
// nodes it needs. It returns the node of each Pod and the nodes as they are after all of them; when a Pod
// fits nowhere, the reason names which Pod. A claim with selectors takes only the cards selects says match
// them (any card where selects is nil). The nodes passed in are not changed.
func PlacePods(nodes []NodeCards, pods [][]Claim, selects DeviceSelector) ([]string, []NodeCards, error) {
	names, out, failed := placePods(nodes, pods, selects)
	if failed < 0 {
		return names, out, nil
	}
	err := noNodeTakes(out, pods[failed], selects)
	if len(pods) > 1 {
		return nil, nil, errors.Wrapf(err, "Pod %d of %d", failed+1, len(pods))
	}
	return nil, nil, err
}

// FitPods is PlacePods for a caller with no use for the reason a workload does not fit (one counted before the
// workload being judged): ok is false where PlacePods would refuse, and no refusal is written.
func FitPods(nodes []NodeCards, pods [][]Claim, selects DeviceSelector) ([]string, []NodeCards, bool) {
	names, out, failed := placePods(nodes, pods, selects)
	return names, out, failed < 0
}

// placePods places the Pods in turn; failed is the index of the first Pod that fits nowhere (the nodes then as
// they are after the Pods before it), -1 when all fit.
func placePods(nodes []NodeCards, pods [][]Claim, selects DeviceSelector) ([]string, []NodeCards, int) {
	names := make([]string, 0, len(pods))
	out := nodes
	for i, claims := range pods {
		j, trial, ok := placeFirst(out, claims, selects)
		if !ok {
			return nil, out, i
		}
		if i == 0 {
			out = append([]NodeCards(nil), nodes...)
		}
		names, out[j] = append(names, trial.Name), trial
	}
	return names, out, -1
}
