package pools

import (
	"fmt"
	"maps"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// NodeCards are one node's cards as its ledger stands, by manufacturer.
type NodeCards struct {
	Name  string
	Cards map[string][]Card
}

// NodeCardsOf returns a node's cards with the ledger rebuilt from the claims of the Pods bound to it.
func NodeCardsOf(d *workerv1.Devices, bound []Claim) NodeCards {
	st, _, _ := Ledger(d, bound)
	charged := d.DeepCopy()
	charged.Status = st
	byID := LedgerCards(charged)
	out := NodeCards{Name: d.Name, Cards: map[string][]Card{}}
	for _, g := range d.Spec.Groups {
		for _, a := range g.Accelerators {
			out.Cards[g.Manufacturer] = append(out.Cards[g.Manufacturer], byID[a.ID])
		}
	}
	return out
}

// Place puts all of one workload's claims on the first node that takes them, and returns that node's name
// and the nodes as they are after it. When no node takes them it returns the reasons of the first nodes, in
// their order (maxReasons of them, then how many more refused). The nodes passed in are not changed.
func Place(nodes []NodeCards, claims []Claim) (string, []NodeCards, error) {
	i, trial, ok := placeFirst(nodes, claims)
	if !ok {
		return "", nil, noNodeTakes(nodes, claims)
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
func placeFirst(nodes []NodeCards, claims []Claim) (int, NodeCards, bool) {
	for i, n := range nodes {
		if trial, ok := placeOnNode(n, claims); ok {
			return i, trial, true
		}
	}
	return -1, NodeCards{}, false
}

// noNodeTakes says why no node takes the claims: the reasons of the first nodes, in their order.
func noNodeTakes(nodes []NodeCards, claims []Claim) error {
	if len(nodes) == 0 {
		return errors.New("no node serves the assigned flavor")
	}
	var reasons []string
	for _, n := range nodes[:min(len(nodes), maxReasons)] {
		reasons = append(reasons, fmt.Sprintf("%s: %v", n.Name, whyNot(n, claims)))
	}
	if more := len(nodes) - len(reasons); more > 0 {
		reasons = append(reasons, fmt.Sprintf("%d more node(s) have no room either", more))
	}
	return errors.Errorf("%s", strings.Join(reasons, "; "))
}

// placeOnNode puts all the claims on one node and returns the node after them, ok false when one does not
// fit. Only the manufacturers' cards it changes are copied.
func placeOnNode(n NodeCards, claims []Claim) (NodeCards, bool) {
	trial := n
	copied := false
	for _, c := range claims {
		_, after, ok := fit(trial.Cards[c.Manufacturer], c.Demand)
		if !ok {
			return NodeCards{}, false
		}
		if !copied {
			trial = NodeCards{Name: n.Name, Cards: maps.Clone(n.Cards)}
			copied = true
		}
		trial.Cards[c.Manufacturer] = after
	}
	return trial, true
}

// whyNot returns the reason the first claim that does not fit the node gives, after the claims before it.
func whyNot(n NodeCards, claims []Claim) error {
	cards := maps.Clone(n.Cards)
	for _, c := range claims {
		_, after, err := Fit(cards[c.Manufacturer], c.Demand)
		if err != nil {
			return err
		}
		cards[c.Manufacturer] = after
	}
	return errors.New("it fits")
}

// PlacePods places a workload's Pods in turn, each Pod's claims on one node (its containers share a node) and
// each Pod on whichever node takes it after the Pods before, so a workload of several Pods spreads over the
// nodes it needs. It returns the node of each Pod and the nodes as they are after all of them; when a Pod
// fits nowhere, the reason names which Pod. The nodes passed in are not changed.
func PlacePods(nodes []NodeCards, pods [][]Claim) ([]string, []NodeCards, error) {
	names, out, failed := placePods(nodes, pods)
	if failed < 0 {
		return names, out, nil
	}
	err := noNodeTakes(out, pods[failed])
	if len(pods) > 1 {
		return nil, nil, errors.Wrapf(err, "Pod %d of %d", failed+1, len(pods))
	}
	return nil, nil, err
}

// FitPods is PlacePods for a caller with no use for the reason a workload does not fit (one counted before the
// workload being judged): ok is false where PlacePods would refuse, and no refusal is written.
func FitPods(nodes []NodeCards, pods [][]Claim) ([]string, []NodeCards, bool) {
	names, out, failed := placePods(nodes, pods)
	return names, out, failed < 0
}

// placePods places the Pods in turn; failed is the index of the first Pod that fits nowhere (the nodes then as
// they are after the Pods before it), -1 when all fit.
func placePods(nodes []NodeCards, pods [][]Claim) ([]string, []NodeCards, int) {
	names := make([]string, 0, len(pods))
	out := nodes
	for i, claims := range pods {
		j, trial, ok := placeFirst(out, claims)
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
