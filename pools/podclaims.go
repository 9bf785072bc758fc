package pools

import (
	"encoding/json"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/vendors"
)

// PodClaims returns what the Pod's containers and init containers ask of its node's cards, with the cards
// recorded for them. A slice without units (a Pod made before the webhook folded them) is folded from its
// memory percentage. An init container holds its cards until it has run (a sidecar, restartPolicy Always, as
// long as the Pod): charging it beside the containers is never less than Kubernetes gives, so no card is
// promised twice while a Pod initialises.
func PodClaims(pod *corev1.Pod) []Claim {
	recorded := map[string][]string{}
	_ = json.Unmarshal([]byte(pod.Annotations[workerv1.AnnotationAllocated]), &recorded)
	ran := map[string]bool{}
	for _, s := range pod.Status.InitContainerStatuses {
		ran[s.Name] = s.State.Terminated != nil
	}
	var containers []corev1.Container
	for _, c := range pod.Spec.InitContainers {
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		if sidecar || !ran[c.Name] {
			containers = append(containers, c)
		}
	}
	var out []Claim
	for _, c := range append(containers, pod.Spec.Containers...) {
		for _, v := range vendors.All() {
			d, ok := demand(c.Resources.Limits, v)
			if !ok {
				continue
			}
			out = append(out, Claim{Key: pod.Namespace + "/" + pod.Name + "/" + c.Name, Manufacturer: v.Key,
				Demand: d, Cards: recorded[c.Name]})
		}
	}
	return out
}

func demand(limits corev1.ResourceList, v vendors.Vendor) (Demand, bool) {
	count := func(name string) int64 {
		q, ok := limits[corev1.ResourceName(name)]
		if !ok {
			return 0
		}
		return q.Value()
	}
	base := v.ResourceName
	switch {
	case count(base) > 0:
		return Demand{Family: FamilyExclusive, Cards: count(base)}, true
	case count(base+".shared") > 0:
		return Demand{Family: FamilyShared, Cards: count(base + ".shared")}, true
	case count(base+".sliced") > 0:
		// The units the webhook folded, but never less than the memory budget the slice is given: a client's
		// own units (a Pod the webhook did not see) cannot buy a big budget cheaply.
		units := max(count(base+".sliced.units"), SliceUnits(count(base+".sliced.memory-percentage")))
		return Demand{Family: FamilySliced, Units: units}, true
	case v.PartitionKind != "" && count(base+".partitioned") > 0:
		// The profile is the one per-profile key the container asks; the first in name order if it asks several.
		prefix := v.ProfilePrefix()
		var profiles []string
		for name := range limits {
			if profile, ok := strings.CutPrefix(string(name), prefix); ok && count(string(name)) > 0 {
				profiles = append(profiles, profile)
			}
		}
		if len(profiles) > 0 {
			sort.Strings(profiles)
			return Demand{Family: FamilyPartitioned, Profile: profiles[0], Cards: count(prefix + profiles[0])}, true
		}
	}
	return Demand{}, false
}

// SliceUnits folds a memory percentage of a card into credits: 20 % is 320,000.
func SliceUnits(memoryPercent int64) int64 { return memoryPercent * M / 100 }
