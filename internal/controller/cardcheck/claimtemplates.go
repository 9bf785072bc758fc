package cardcheck

import (
	"context"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gpustack/gpustack-operator/pools"
)

// A Pod that asks for cards through DRA names a ResourceClaimTemplate, whose claim the scheduler allocates once
// the Pod is let go: the check counts what the template asks (pools.ClaimSpecClaims) beside what the Pod's
// containers ask of the device plugins, so Pods of one card each are placed card by card, as Kueue's quota
// cannot (it charges the credits but does not know which node's cards are free). A claim the Pod names
// directly (resourceClaimName) is counted once allocated, through the ledger, and not before.

// claimSpecs are what each ResourceClaimTemplate a Workload's Pods name asks (pools.ClaimSpecClaims, each
// claim's key the request's name alone), by template name (in the Workload's namespace). A template not in it
// is not counted: the worker may not read templates, or it was deleted.
type claimSpecs map[string][]pools.Claim

// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaimtemplates,verbs=get;list;watch

// claimSpecsOf reads the templates the Workload's Pods name, from the cache; a template that is not there, or
// asks for what the check cannot count, is a refusal naming it and its PodSet. None without
// ResourceClaimTemplates.
func (r *Reconciler) claimSpecsOf(ctx context.Context, wl *kueue.Workload) (specs claimSpecs, refusal string, err error) {
	specs, refusals, err := r.readClaimSpecs(ctx, wl)
	if len(refusals) > 0 {
		return nil, refusals[0], err
	}
	return specs, "", err
}

// readClaimSpecs reads the templates the Workload's Pods name, from the cache: the ones it can count, and a
// refusal for each that is not there or asks for what the check cannot count.
func (r *Reconciler) readClaimSpecs(ctx context.Context, wl *kueue.Workload) (specs claimSpecs, refusals []string, err error) {
	if !r.ResourceClaimTemplates {
		return nil, nil, nil
	}
	specs = claimSpecs{}
	for _, ps := range wl.Spec.PodSets {
		for _, prc := range ps.Template.Spec.ResourceClaims {
			name := ptr.Deref(prc.ResourceClaimTemplateName, "")
			if name == "" {
				continue
			}
			if _, done := specs[name]; done {
				continue
			}
			tmpl := &resourceapi.ResourceClaimTemplate{}
			err := r.Client.Get(ctx, client.ObjectKey{Namespace: wl.Namespace, Name: name}, tmpl)
			if kerrors.IsNotFound(err) {
				refusals = append(refusals, fmt.Sprintf("PodSet %s's claim %s names ResourceClaimTemplate %s, which does not exist", ps.Name, prc.Name, name))
				continue
			}
			if err != nil {
				return nil, nil, errors.Wrapf(err, "cannot get ResourceClaimTemplate %s", name)
			}
			claims, err := pools.ClaimSpecClaims("", tmpl.Spec.Spec)
			if err != nil {
				refusals = append(refusals, fmt.Sprintf("PodSet %s's ResourceClaimTemplate %s: %v", ps.Name, name, err))
				continue
			}
			specs[name] = claims
		}
	}
	return specs, refusals, nil
}

// specsOfInflight returns the templates of a Workload in flight. It passed the check, so they could be
// counted then and still can (a template's spec does not change); one deleted since counts as nothing, the
// others as before. A template the cache cannot answer for now counts as nothing this verdict.
func (r *Reconciler) specsOfInflight(ctx context.Context) func(*kueue.Workload) claimSpecs {
	return func(wl *kueue.Workload) claimSpecs {
		specs, _, _ := r.readClaimSpecs(ctx, wl)
		return specs
	}
}

// podClaimsOf returns what one Pod of a PodSet asks: its containers' requests of the device plugins and its
// templates' requests of this project's DeviceClasses.
func podClaimsOf(pod *corev1.Pod, specs claimSpecs) []pools.Claim {
	claims := pools.PodClaims(pod)
	for _, prc := range pod.Spec.ResourceClaims {
		for _, c := range specs[ptr.Deref(prc.ResourceClaimTemplateName, "")] {
			c.Key = fmt.Sprintf("%s/%s/%s%s", pod.Namespace, pod.Name, prc.Name, c.Key)
			claims = append(claims, c)
		}
	}
	return claims
}
