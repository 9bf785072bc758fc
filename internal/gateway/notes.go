package gateway

import (
	"context"
	"sort"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/cardcheck"
)

// MemberReasons says, in one line, why each member that holds a copy of the manager's Workload
// namespace/name has not admitted it: its per-card check's words, or its Kueue's reason for no quota. Members
// in name order; "" when no member holds a copy yet.
func MemberReasons(namespace, name string, states []MemberState) string {
	var out []string
	for _, s := range sorted(states) {
		for i := range s.Dispatched {
			wl := &s.Dispatched[i]
			if wl.Namespace == namespace && wl.Name == name {
				out = append(out, s.Name+": "+waitOf(wl))
			}
		}
	}
	return strings.Join(out, "; ")
}

// waitOf is what a member's copy of a Workload waits for: a refusal of the member's settings as its per-card
// check words it, or what it waits for.
func waitOf(wl *kueue.Workload) string {
	for _, c := range wl.Status.AdmissionChecks {
		if c.State == kueue.CheckStateReady || c.Message == "" {
			continue
		}
		if strings.HasPrefix(c.Message, cardcheck.RefusedPrefix) {
			return c.Message
		}
		return "waiting for a card with room: " + c.Message
	}
	if c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved); c != nil && c.Status == metav1.ConditionFalse && c.Message != "" {
		return "waiting for quota: " + c.Message
	}
	if apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) {
		return "quota reserved, being admitted"
	}
	return "queued"
}

// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch

// notes writes, on the manager's Pod of each Workload the gateway's MultiKueue check holds, what its Instance's
// status tells of the members: why each has not admitted it while none has (gatewayv1.AnnotationMemberReasons),
// and, once one runs it, where it is reached there (gatewayv1.AnnotationMemberAccess).
func (d *Dispatcher) notes(ctx context.Context, states []MemberState) error {
	var wls kueue.WorkloadList
	if err := d.Client.List(ctx, &wls); err != nil {
		return errors.Wrap(err, "cannot list the manager's Workloads")
	}
	sort.Slice(wls.Items, func(i, j int) bool { return namespacedBefore(wls.Items[i].ObjectMeta, wls.Items[j].ObjectMeta) })
	var errs []error
	for i := range wls.Items {
		wl := &wls.Items[i]
		key, value, ok := note(wl, states)
		if !ok {
			continue
		}
		for _, ref := range wl.OwnerReferences {
			if ref.Kind != "Pod" {
				continue
			}
			if err := d.annotate(ctx, types.NamespacedName{Namespace: wl.Namespace, Name: ref.Name}, key, value); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// note is the annotation a Workload's Pods carry: the members' reasons while the gateway's check is pending,
// the member's access once MultiKueue placed it on a member the gateway reads; ok is false for none.
func note(wl *kueue.Workload, states []MemberState) (key, value string, ok bool) {
	check := gatewayCheck(wl)
	switch {
	case check == nil:
		return "", "", false
	case wl.Status.ClusterName == nil && check.State != kueue.CheckStateReady:
		return gatewayv1.AnnotationMemberReasons, MemberReasons(wl.Namespace, wl.Name, states), true
	case wl.Status.ClusterName == nil:
		return "", "", false
	}
	for _, s := range states {
		if s.Name != *wl.Status.ClusterName {
			continue
		}
		// An Instance's Pod, and so the member's Service, has the Instance's name.
		for _, ref := range wl.OwnerReferences {
			if ref.Kind == "Pod" {
				return gatewayv1.AnnotationMemberAccess, s.Access[wl.Namespace+"/"+ref.Name], true
			}
		}
	}
	return "", "", false
}

// gatewayCheck is the Workload's state of the gateway's MultiKueue check, nil when it has none.
func gatewayCheck(wl *kueue.Workload) *kueue.AdmissionCheckState {
	for i, c := range wl.Status.AdmissionChecks {
		if strings.HasPrefix(string(c.Name), gatewayv1.MultiKueueCheckPrefix) {
			return &wl.Status.AdmissionChecks[i]
		}
	}
	return nil
}

// annotate sets the Pod's annotation key to value when it differs.
func (d *Dispatcher) annotate(ctx context.Context, pod types.NamespacedName, key, value string) error {
	p := &corev1.Pod{}
	if err := d.Client.Get(ctx, pod, p); err != nil {
		return errors.Wrapf(client.IgnoreNotFound(err), "cannot get Pod %s", pod)
	}
	if p.Annotations[key] == value {
		return nil
	}
	orig := p.DeepCopy()
	metav1.SetMetaDataAnnotation(&p.ObjectMeta, key, value)
	return errors.Wrapf(client.IgnoreNotFound(d.Client.Patch(ctx, p, client.MergeFrom(orig))), "cannot note %s on Pod %s", key, pod)
}
