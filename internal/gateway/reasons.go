package gateway

import (
	"context"
	"fmt"
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

// reasons writes, on the manager's Pod of each Workload its MultiKueue check still holds, why each member has
// not admitted it (gatewayv1.AnnotationMemberReasons), for the Instance's status to tell.
func (d *Dispatcher) reasons(ctx context.Context, states []MemberState) error {
	var wls kueue.WorkloadList
	if err := d.Client.List(ctx, &wls); err != nil {
		return errors.Wrap(err, "cannot list the manager's Workloads")
	}
	sort.Slice(wls.Items, func(i, j int) bool { return namespacedBefore(wls.Items[i].ObjectMeta, wls.Items[j].ObjectMeta) })
	var errs []error
	for i := range wls.Items {
		wl := &wls.Items[i]
		if wl.Status.ClusterName != nil || !dispatchPending(wl) {
			continue
		}
		reasons := MemberReasons(wl.Namespace, wl.Name, states)
		for _, ref := range wl.OwnerReferences {
			if ref.Kind != "Pod" {
				continue
			}
			if err := d.annotate(ctx, types.NamespacedName{Namespace: wl.Namespace, Name: ref.Name}, reasons); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// dispatchPending reports whether the Workload's gateway MultiKueue check has not passed yet.
func dispatchPending(wl *kueue.Workload) bool {
	for _, c := range wl.Status.AdmissionChecks {
		if strings.HasPrefix(string(c.Name), gatewayv1.MultiKueueCheckPrefix) {
			return c.State != kueue.CheckStateReady
		}
	}
	return false
}

// annotate sets the Pod's member-reasons annotation when it differs.
func (d *Dispatcher) annotate(ctx context.Context, key types.NamespacedName, reasons string) error {
	pod := &corev1.Pod{}
	if err := d.Client.Get(ctx, key, pod); err != nil {
		return errors.Wrapf(client.IgnoreNotFound(err), "cannot get Pod %s", key)
	}
	if pod.Annotations[gatewayv1.AnnotationMemberReasons] == reasons {
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, gatewayv1.AnnotationMemberReasons, reasons)
	return errors.Wrapf(client.IgnoreNotFound(d.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, []byte(patch)))),
		"cannot note the members' reasons on Pod %s", key)
}
