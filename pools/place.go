package pools

import (
	"fmt"
	"sort"
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
// and the nodes as they are after it. When no node takes them it returns the reason the closest node gave.
// The nodes passed in are not changed.
func Place(nodes []NodeCards, claims []Claim) (string, []NodeCards, error) {
	if len(nodes) == 0 {
		return "", nil, errors.New("no node serves the assigned flavor")
	}
	var reasons []string
	for i, n := range nodes {
		trial := copyCards(n)
		ok := true
		for _, c := range claims {
			_, after, err := Fit(trial.Cards[c.Manufacturer], c.Demand)
			if err != nil {
				reasons = append(reasons, fmt.Sprintf("%s: %v", n.Name, err))
				ok = false
				break
			}
			trial.Cards[c.Manufacturer] = after
		}
		if ok {
			out := append([]NodeCards(nil), nodes...)
			out[i] = trial
			return n.Name, out, nil
		}
	}
	sort.Strings(reasons)
	return "", nil, errors.Errorf("%s", strings.Join(reasons, "; "))
}

// PlacePods places a workload's Pods in turn, each Pod's claims on one node (its containers share a node) and
// each Pod on whichever node takes it after the Pods before, so a workload of several Pods spreads over the
// nodes it needs. It returns the node of each Pod and the nodes as they are after all of them; when a Pod
// fits nowhere, the reason names which Pod. The nodes passed in are not changed.
func PlacePods(nodes []NodeCards, pods [][]Claim) ([]string, []NodeCards, error) {
	names := make([]string, 0, len(pods))
	for i, claims := range pods {
		name, after, err := Place(nodes, claims)
		if err != nil {
			if len(pods) > 1 {
				return nil, nil, errors.Wrapf(err, "Pod %d of %d", i+1, len(pods))
			}
			return nil, nil, err
		}
		names, nodes = append(names, name), after
	}
	return names, nodes, nil
}

func copyCards(n NodeCards) NodeCards {
	out := NodeCards{Name: n.Name, Cards: make(map[string][]Card, len(n.Cards))}
	for k, v := range n.Cards {
		out.Cards[k] = append([]Card(nil), v...)
	}
	return out
}
