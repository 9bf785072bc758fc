// Package setting keeps each Setting's status (effective value, default, description) current, and the
// gpustack-settings Secret in step with the Settings.
package setting

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/settings"
)

// Reconciler refreshes one Setting's status.
type Reconciler struct {
	Client client.Client
	// Recorder gets an event on the Setting whenever its effective value changes.
	Recorder record.EventRecorder
}

// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=settings,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=settings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",namespace=gpustack-system,resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",namespace=gpustack-system,resources=secrets,verbs=get;list;watch;update,resourceNames=gpustack-settings
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile writes the Setting's status when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	s := &workerv1.Setting{}
	if err := r.Client.Get(ctx, req.NamespacedName, s); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	before := s.Status.Value
	if err := settings.UpdateStatus(ctx, r.Client, s); err != nil {
		return reconcile.Result{}, err
	}
	switch d, _ := workerv1.LookupSetting(s.Name); {
	case s.Status.Value == before:
	case d.IsSensitive():
		// Events are read by more than those who read Settings: a credential's value is not recorded.
		r.Recorder.Eventf(s, corev1.EventTypeNormal, "SettingChanged", "%s changed; its value is sensitive and not shown", s.Name)
	default:
		was := strconv.Quote(before)
		if before == "" {
			was = "unset"
		}
		r.Recorder.Eventf(s, corev1.EventTypeNormal, "SettingChanged", "%s is now %q (was %s; default %q)",
			s.Name, s.Status.Value, was, s.Status.Default)
	}
	values, _, err := settings.Load(ctx, r.Client)
	if err != nil {
		return reconcile.Result{}, err
	}
	// Only this Setting's key: the others follow their own Settings.
	return reconcile.Result{}, settings.SyncSecret(ctx, r.Client, settings.Values{s.Name: values[s.Name]})
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("settings").For(&workerv1.Setting{}).Complete(r)
}
