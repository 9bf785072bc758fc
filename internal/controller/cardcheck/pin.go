package cardcheck

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// The check judges a Workload only on the nodes its Pods may go to (their nodeSelector and required node
// affinity, an Instance's pin included), and pins a Workload it placed on one node there: its verdict carries
// podSetUpdates with that node's kubernetes.io/hostname, which Kueue adds to the Pods' nodeSelector when it
// lets them go, so the scheduler binds them where the ledger counted them. A Workload whose Pods spread over
// several nodes is not pinned; the device plugin's ledger check at Allocate is its guard.

// acceleratedTemplates returns the Pod of each PodSet that asks for an accelerator, by PodSet name; with pinned,
// with the nodeSelector this check pinned it to merged in (a Workload in flight goes where it was pinned; one
// judged again is placed afresh, whatever an earlier verdict said).
func acceleratedTemplates(wl *kueue.Workload, pinned bool, specs claimSpecs) map[kueue.PodSetReference]*corev1.Pod {
	out := map[kueue.PodSetReference]*corev1.Pod{}
	var updates []kueue.PodSetUpdate
	if s := checkState(wl); s != nil && pinned {
		updates = s.PodSetUpdates
	}
	for _, ps := range wl.Spec.PodSets {
		pod := &corev1.Pod{Spec: *ps.Template.Spec.DeepCopy()}
		if len(podClaimsOf(pod, specs)) == 0 {
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
