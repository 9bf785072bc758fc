package settingsapi

import (
	"context"
	"fmt"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	settingsv1 "github.com/gpustack/gpustack-operator/apis/settings/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/settings"
)

// +kubebuilder:rbac:groups=worker.gpustack.ai,namespace=gpustack-system,resources=settings,verbs=get;list;watch;update

// REST is the settings resource: get, list, watch, update and patch over the stored Settings. It implements
// neither create nor delete, so the API server answers both with 405 Method Not Allowed.
type REST struct {
	// Client reads, watches and writes the stored Settings, directly (not from a cache), so that a
	// resourceVersion the served API hands out is the API server's own.
	Client client.WithWatch
}

var (
	_ rest.Storage              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
	_ rest.ShortNamesProvider   = &REST{}
	_ rest.CategoriesProvider   = &REST{}
	_ rest.Getter               = &REST{}
	_ rest.Lister               = &REST{}
	_ rest.Watcher              = &REST{}
	_ rest.Updater              = &REST{}
)

// New returns an empty Setting.
func (r *REST) New() runtime.Object { return &settingsv1.Setting{} }

// NewList returns an empty SettingList.
func (r *REST) NewList() runtime.Object { return &settingsv1.SettingList{} }

// Destroy releases nothing: the client is the worker's.
func (r *REST) Destroy() {}

// NamespaceScoped is true: the Settings live in gpustack-system.
func (r *REST) NamespaceScoped() bool { return true }

// GetSingularName is setting.
func (r *REST) GetSingularName() string { return "setting" }

// ShortNames are the reference's: kubectl get set.
func (r *REST) ShortNames() []string { return []string{"set"} }

// Categories puts Settings in kubectl get gpustack.
func (r *REST) Categories() []string { return []string{"gpustack"} }

// Get returns the served view of one stored Setting.
func (r *REST) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	stored := &workerv1.Setting{}
	if err := r.Client.Get(ctx, key(ctx, name), stored, &client.GetOptions{Raw: opts}); err != nil {
		return nil, served(err, name)
	}
	return View(stored), nil
}

// List returns the served views of the stored Settings the options select; selectors, paging and
// resourceVersion semantics are the API server's, passed on.
func (r *REST) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	stored := &workerv1.SettingList{}
	if err := r.Client.List(ctx, stored, listOptions(ctx, opts)); err != nil {
		return nil, err
	}
	out := &settingsv1.SettingList{TypeMeta: metav1.TypeMeta{APIVersion: settingsv1.GroupVersion.String(), Kind: "SettingList"},
		ListMeta: stored.ListMeta, Items: make([]settingsv1.Setting, 0, len(stored.Items))}
	for i := range stored.Items {
		out.Items = append(out.Items, *View(&stored.Items[i]))
	}
	return out, nil
}

// Watch passes on a watch of the stored Settings, each event's object turned into its view; its
// resourceVersions, bookmarks and replays are the API server's.
func (r *REST) Watch(ctx context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	w, err := r.Client.Watch(ctx, &workerv1.SettingList{}, listOptions(ctx, opts))
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		if s, ok := e.Object.(*workerv1.Setting); ok {
			e.Object = View(s)
		}
		return e, true
	}), nil
}

// updateAttempts bounds the retries of an update that lost a race with another writer of the stored Setting
// (the worker refreshing its status, another administrator).
const updateAttempts = 5

// Update writes the new spec.value (and labels and annotations) of a Setting into the stored one; a value the
// setting refuses is Invalid, and a resourceVersion the caller gave that is no longer current is a Conflict.
// PATCH comes here too: the API server applies the patch to the view Get returns and hands on the result.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	for attempt := 1; ; attempt++ {
		out, raced, err := r.updateOnce(ctx, name, objInfo, updateValidation, opts)
		if !raced || attempt == updateAttempts {
			return out, false, err
		}
	}
}

// updateOnce is one attempt of Update; raced is true when the stored Setting changed between its read and its
// write, and the update may be tried again on the new one.
func (r *REST) updateOnce(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo,
	updateValidation rest.ValidateObjectUpdateFunc, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	stored := &workerv1.Setting{}
	if err := r.Client.Get(ctx, key(ctx, name), stored); err != nil {
		return nil, false, served(err, name)
	}
	old := View(stored)
	obj, err := objInfo.UpdatedObject(ctx, old)
	if err != nil {
		return nil, false, err
	}
	updated, ok := obj.(*settingsv1.Setting)
	if !ok {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("not a Setting: %T", obj))
	}
	if updated.ResourceVersion != "" && updated.ResourceVersion != stored.ResourceVersion {
		return nil, false, apierrors.NewConflict(settingsv1.Resource("settings"), name,
			errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	if updateValidation != nil {
		if err := updateValidation(ctx, updated, old); err != nil {
			return nil, false, err
		}
	}
	changed, err := apply(updated, stored)
	if err != nil || !changed {
		return old, false, err
	}
	err = r.Client.Update(ctx, stored, &client.UpdateOptions{DryRun: opts.DryRun})
	if apierrors.IsConflict(err) {
		return nil, true, err
	}
	if err != nil {
		return nil, false, served(err, name)
	}
	return View(stored), false, nil
}

// apply copies what an update may change onto the stored Setting, and reports whether anything changed: the
// value, when the update has one (a blank one returns the setting to its default), and the labels and
// annotations (kubectl apply keeps its last-applied configuration there). Everything else of the update is
// the view's own and ignored.
func apply(updated *settingsv1.Setting, stored *workerv1.Setting) (bool, error) {
	changed := false
	if updated.Spec != nil && updated.Spec.Value != nil {
		value := strings.TrimSpace(*updated.Spec.Value)
		if err := settings.Check(stored.Name, value); err != nil {
			shown := value
			if d, _ := workerv1.LookupSetting(stored.Name); d.IsSensitive() {
				shown = settingsv1.SensitiveValue
			}
			return false, apierrors.NewInvalid(settingsv1.Kind("Setting"), stored.Name,
				field.ErrorList{field.Invalid(field.NewPath("spec", "value"), shown, err.Error())})
		}
		if value != stored.Spec.Value {
			stored.Spec.Value, changed = value, true
		}
	}
	if !equality.Semantic.DeepEqual(updated.Labels, stored.Labels) {
		stored.Labels, changed = updated.Labels, true
	}
	if !equality.Semantic.DeepEqual(updated.Annotations, stored.Annotations) {
		stored.Annotations, changed = updated.Annotations, true
	}
	return changed, nil
}

// key is the stored Setting of a request's namespace and name.
func key(ctx context.Context, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: genericapirequest.NamespaceValue(ctx), Name: name}
}

// served names the served resource in a NotFound of the stored one; other errors pass on as they are.
func served(err error, name string) error {
	if apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(settingsv1.Resource("settings"), name)
	}
	return err
}

// listOptions passes a list or watch request's options on to the stored Settings.
func listOptions(ctx context.Context, opts *metainternalversion.ListOptions) *client.ListOptions {
	lo := &client.ListOptions{Namespace: genericapirequest.NamespaceValue(ctx)}
	if opts == nil {
		return lo
	}
	lo.LabelSelector, lo.FieldSelector, lo.Limit, lo.Continue = opts.LabelSelector, opts.FieldSelector, opts.Limit, opts.Continue
	lo.Raw = &metav1.ListOptions{ResourceVersion: opts.ResourceVersion, ResourceVersionMatch: opts.ResourceVersionMatch,
		AllowWatchBookmarks: opts.AllowWatchBookmarks, TimeoutSeconds: opts.TimeoutSeconds, SendInitialEvents: opts.SendInitialEvents}
	return lo
}
