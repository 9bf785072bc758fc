package instancepod

// FlavorLabelsOf returns what a pin adds to its Pod's nodeSelector so that Kueue assigns the flavor that holds
// the pinned node: the nodeLabels of the pool's flavors that the node carries, keeping the labels on which
// they agree. Kueue skips a flavor whose nodeLabels contradict the Pod's selector, so a pin into a pool of
// several flavors is admitted on the pinned node's own flavor, never on one whose nodes exclude it. A node no
// flavor of the pool holds adds nothing: the pin then waits with the scheduler's reason.
func FlavorLabelsOf(node map[string]string, flavors []map[string]string) map[string]string {
	var out map[string]string
	for _, f := range flavors {
		if !holds(f, node) {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(f))
			for k, v := range f {
				out[k] = v
			}
			continue
		}
		for k, v := range out {
			if f[k] != v {
				delete(out, k)
			}
		}
	}
	return out
}

// holds reports whether a node with these labels carries every one of a flavor's nodeLabels.
func holds(flavor, node map[string]string) bool {
	for k, v := range flavor {
		if got, ok := node[k]; !ok || got != v {
			return false
		}
	}
	return true
}
