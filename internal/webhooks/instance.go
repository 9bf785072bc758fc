package webhooks

import (
	"context"
	"fmt"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/instancepod"
	"github.com/gpustack/gpustack-operator/internal/settings"
)

// InstanceValidator refuses an Instance its pool cannot serve, naming the field and the pool.
type InstanceValidator struct {
	// Reader reads types and nodes from the cache, so a burst of Instances costs the API server nothing.
	Reader client.Reader
	// Live reads what the cache does not have yet: a type or node created a moment ago.
	Live client.Reader
	// Reviews asks the API server whether the Instance's writer may read the Secrets its Pod would use
	// (SubjectAccessReviews); nil skips the question.
	Reviews client.Client
}

// get reads from the cache, and from the API server when the cache does not have the object.
func (v *InstanceValidator) get(ctx context.Context, key client.ObjectKey, o client.Object) error {
	err := v.Reader.Get(ctx, key, o)
	if apierrors.IsNotFound(err) && v.Live != nil {
		return v.Live.Get(ctx, key, o)
	}
	return err
}

// ValidateCreate checks a new Instance.
func (v *InstanceValidator) ValidateCreate(ctx context.Context, inst *workerv1.Instance) (admission.Warnings, error) {
	return nil, v.validate(ctx, inst, nil)
}

// ValidateUpdate checks an Instance being started or pointed elsewhere.
func (v *InstanceValidator) ValidateUpdate(ctx context.Context, old, inst *workerv1.Instance) (admission.Warnings, error) {
	return nil, v.validate(ctx, inst, old)
}

// ValidateDelete allows every deletion.
func (v *InstanceValidator) ValidateDelete(context.Context, *workerv1.Instance) (admission.Warnings, error) {
	return nil, nil
}

func (v *InstanceValidator) validate(ctx context.Context, inst, old *workerv1.Instance) error {
	var f instancepod.Facts
	it := &workerv1.InstanceType{}
	switch err := v.get(ctx, client.ObjectKey{Name: inst.Spec.Type}, it); {
	case err == nil && it.DeletionTimestamp == nil:
		f.Type = it
	case err != nil && !apierrors.IsNotFound(err):
		return apierrors.NewInternalError(err)
	}
	if inst.Spec.NodeName != "" {
		switch err := v.get(ctx, client.ObjectKey{Name: inst.Spec.NodeName}, &corev1.Node{}); {
		case err == nil:
			f.NodeExists = true
		case !apierrors.IsNotFound(err):
			return apierrors.NewInternalError(err)
		}
	}
	errs := instancepod.Validate(inst, old, f)
	gates, err := v.gates(ctx, inst, old)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	secrets, err := v.secretAccess(ctx, inst, old)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if errs = append(append(errs, gates...), secrets...); len(errs) > 0 {
		return apierrors.NewInvalid(workerv1.GroupVersion.WithKind("Instance").GroupKind(), inst.Name, errs)
	}
	return nil
}

// gates holds the privileged and host path gates with the settings in effect.
func (v *InstanceValidator) gates(ctx context.Context, inst, old *workerv1.Instance) (field.ErrorList, error) {
	values, _, err := settings.Load(ctx, v.Reader)
	if err != nil {
		return nil, err
	}
	user := ""
	if req, err := admission.RequestFromContext(ctx); err == nil {
		user = req.UserInfo.Username
	}
	return gateErrors(inst, old, user, values), nil
}

// gateErrors is instancepod.Gates with the exemptions the gate policies have: the system's namespaces and the
// operator's own service accounts (the worker stopping an Instance it drains).
func gateErrors(inst, old *workerv1.Instance, user string, values settings.Values) field.ErrorList {
	if workerv1.IsSystemNamespace(inst.Namespace) || strings.HasPrefix(user, "system:serviceaccount:"+workerv1.SystemNamespace+":") {
		return nil
	}
	return instancepod.Gates(inst, old, values.Bool(workerv1.SettingInstancePrivilegedAllowed),
		values.Bool(workerv1.SettingInstanceHostPathVolumeAllowed))
}

// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// secretAccess refuses each Secret the Instance's Pod would newly use that its writer may not read: the Pod
// would hand its contents to whoever runs in it, so an Instance must not reach further than its writer.
func (v *InstanceValidator) secretAccess(ctx context.Context, inst, old *workerv1.Instance) (field.ErrorList, error) {
	refs := instancepod.NewSecretRefs(inst, old)
	req, err := admission.RequestFromContext(ctx)
	if v.Reviews == nil || len(refs) == 0 || err != nil {
		return nil, nil
	}
	user := req.UserInfo
	extra := map[string]authorizationv1.ExtraValue{}
	for k, vs := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(vs)
	}
	var errs field.ErrorList
	for _, r := range refs {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user.Username, Groups: user.Groups, UID: user.UID, Extra: extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: inst.Namespace, Name: r.Name},
		}}
		if err := v.Reviews.Create(ctx, sar); err != nil {
			return nil, errors.Wrapf(err, "cannot ask whether %s may read Secret %s/%s", user.Username, inst.Namespace, r.Name)
		}
		if !sar.Status.Allowed {
			errs = append(errs, field.Forbidden(r.Path, fmt.Sprintf("%s may not read Secret %s/%s, so an Instance it writes may not use it",
				user.Username, inst.Namespace, r.Name)))
		}
	}
	return errs, nil
}
