package cardcheck

import (
	"fmt"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gpustack/gpustack-operator/pools"
)

// checkState returns the Workload's state of this check, nil when its queue does not use it.
func checkState(wl *kueue.Workload) *kueue.AdmissionCheckState {
	for i := range wl.Status.AdmissionChecks {
		if wl.Status.AdmissionChecks[i].Name == Name {
			return &wl.Status.AdmissionChecks[i]
		}
	}
	return nil
}

func reserved(wl *kueue.Workload) bool {
	return wl.Status.Admission != nil && apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved)
}

func evicted(wl *kueue.Workload) bool {
	return apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadEvicted) ||
		apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished)
}

// podClaims are the claims of each Pod of one Workload (pools.PlacePods places them Pod by Pod).
type podClaims = [][]pools.Claim

// workloadPods returns the claims of each of the Workload's Pods that asks for an accelerator: each PodSet's
// template, count times, with what its ResourceClaimTemplates of specs ask.
func workloadPods(wl *kueue.Workload, specs claimSpecs) podClaims {
	var out podClaims
	for _, ps := range wl.Spec.PodSets {
		for i := int32(0); i < max(ps.Count, 1); i++ {
			pod := &corev1.Pod{Spec: ps.Template.Spec}
			pod.Namespace, pod.Name = wl.Namespace, fmt.Sprintf("%s/%s/%d", wl.Name, ps.Name, i)
			if claims := podClaimsOf(pod, specs); len(claims) > 0 {
				out = append(out, claims)
			}
		}
	}
	return out
}

// singleFlavor returns the one flavor the Workload's accelerator credits were assigned.
func singleFlavor(wl *kueue.Workload) (kueue.ResourceFlavorReference, error) {
	var found kueue.ResourceFlavorReference
	for _, psa := range wl.Status.Admission.PodSetAssignments {
		for res, f := range psa.Flavors {
			if !strings.HasPrefix(string(res), "credits.gpustack.ai/") {
				continue
			}
			if found != "" && found != f {
				return "", errors.Errorf("the Workload does not resolve to a single accelerator flavor: %s and %s", found, f)
			}
			found = f
		}
	}
	if found == "" {
		return "", errors.New("the Workload does not resolve to a single accelerator flavor: no credits were assigned")
	}
	return found, nil
}

// describe says what the Pods ask for: "a slice of 60%", or "2 Pods of a slice of 60%" when they ask alike.
func describe(pods podClaims) string {
	var each []string
	for _, claims := range pods {
		var parts []string
		for _, c := range claims {
			parts = append(parts, c.Demand.String())
		}
		each = append(each, strings.Join(parts, " and "))
	}
	if len(each) > 1 && !slices.ContainsFunc(each, func(d string) bool { return d != each[0] }) {
		return fmt.Sprintf("%d Pods of %s", len(each), each[0])
	}
	return strings.Join(each, "; ")
}

// onNodes names the nodes the Pods fit on, each once, in order.
func onNodes(names []string) string {
	var seen []string
	for _, n := range names {
		if !slices.Contains(seen, n) {
			seen = append(seen, n)
		}
	}
	if len(seen) == 1 {
		return "node " + seen[0]
	}
	return "nodes " + strings.Join(seen, ", ")
}
