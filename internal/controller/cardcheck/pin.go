package cardcheck

import (
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gpustack/gpustack-operator/pools"
)

// The check judges a Workload only on the nodes its Pods may go to (their nodeSelector and required node
// affinity, an Instance's pin included), and pins a Workload it placed on one node there: its verdict carries
// podSetUpdates with that node's kubernetes.io/hostname, which Kueue adds to the Pods' nodeSelector when it
// lets them go, so the scheduler binds them where the ledger counted them. A Workload whose Pods spread over
// several nodes is not pinned; the device plugin's ledger check at Allocate is its guard.

// acceleratedTemplates returns the Pod of each PodSet that asks for an accelerator, by PodSet name; with pinned,
// with the nodeSelector this check pinned it to merged in (a Workload in flight goes where it was pinned; one
// judged again is placed afresh, whatever an earlier verdict said).
func acceleratedTemplates(wl *kueue.Workload, pinned bool) map[kueue.PodSetReference]*corev1.Pod {
	out := map[kueue.PodSetReference]*corev1.Pod{}
	var updates []kueue.PodSetUpdate
	if s := checkState(wl); s != nil && pinned {
		updates = s.PodSetUpdates
	}
	for _, ps := range wl.Spec.PodSets {
		pod := &corev1.Pod{Spec: *ps.Template.Spec.DeepCopy()}
		if len(pools.PodClaims(pod)) == 0 {
			continue
		}
		for _, u := range updates {
			if u.Name != ps.Name {
				continue
			}
			if pod.Spec.NodeSelector == nil {
				pod.Spec.NodeSelector = map[string]string{}
			}
			for k, v := range u.NodeSelector {
				pod.Spec.NodeSelector[k] = v
			}
		}
		out[ps.Name] = pod
	}
	return out
}

// allowedNodes returns the nodes every one of the Pods may be scheduled on, as far as their nodeSelector and
// required node affinity go.
func allowedNodes(pods map[kueue.PodSetReference]*corev1.Pod, nodes map[string]*corev1.Node) map[string]bool {
	out := map[string]bool{}
	for name, node := range nodes {
		ok := true
		for _, pod := range pods {
			if match, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); err != nil || !match {
				ok = false
				break
			}
		}
		out[name] = ok
	}
	return out
}

// decide places the Pods on the flavor's nodes after the Workloads in flight, each where it was pinned or
// wherever it fits first (one that fits nowhere is not counted), and returns the node of each Pod.
func decide(nodes []pools.NodeCards, objects map[string]*corev1.Node, inflight []*kueue.Workload,
	templates map[kueue.PodSetReference]*corev1.Pod, pods podClaims) ([]string, error) {
	for _, other := range inflight {
		if _, after, err := placeOn(nodes, allowedNodes(acceleratedTemplates(other, true), objects), workloadPods(other)); err == nil {
			nodes = after
		}
	}
	placed, _, err := placeOn(nodes, allowedNodes(templates, objects), pods)
	return placed, err
}

// placeOn places the Pods on the allowed nodes only and returns where each went and every node after it.
func placeOn(nodes []pools.NodeCards, allowed map[string]bool, pods podClaims) ([]string, []pools.NodeCards, error) {
	var subset []pools.NodeCards
	var index []int
	for i, n := range nodes {
		if allowed[n.Name] {
			subset, index = append(subset, n), append(index, i)
		}
	}
	if len(subset) == 0 && len(nodes) > 0 {
		return nil, nil, errors.New("no node of the flavor matches the Pods' node selector and affinity")
	}
	placed, after, err := pools.PlacePods(subset, pods)
	if err != nil {
		return nil, nil, err
	}
	out := append([]pools.NodeCards(nil), nodes...)
	for j, i := range index {
		out[i] = after[j]
	}
	return placed, out, nil
}

// pinOf returns the podSetUpdates that pin the Workload's accelerated PodSets to the one node its Pods were
// placed on; none when they spread over several nodes or the node has no hostname label.
func pinOf(pods map[kueue.PodSetReference]*corev1.Pod, placed []string, nodes map[string]*corev1.Node) []kueue.PodSetUpdate {
	if len(placed) == 0 || slices.ContainsFunc(placed, func(n string) bool { return n != placed[0] }) {
		return nil
	}
	node := nodes[placed[0]]
	if node == nil || node.Labels[corev1.LabelHostname] == "" {
		return nil
	}
	names := make([]kueue.PodSetReference, 0, len(pods))
	for name := range pods {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []kueue.PodSetUpdate
	for _, name := range names {
		out = append(out, kueue.PodSetUpdate{Name: name, NodeSelector: map[string]string{corev1.LabelHostname: node.Labels[corev1.LabelHostname]}})
	}
	return out
}
