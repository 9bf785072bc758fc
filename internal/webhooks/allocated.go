package webhooks

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/package/rbac"
)

// WorkerUser is the user the worker acts as: its service account in the operator's namespace.
var WorkerUser = "system:serviceaccount:" + workerv1.SystemNamespace + ":" + rbac.ServiceAccountName("worker")

// allocatedChanged is the CEL condition under which the API server asks AllocationGuard at all: the Pod is
// created with the cards annotation, or an update changes it. Every other Pod write skips the webhook.
var allocatedChanged = `request.operation == 'CREATE' ? ` + allocatedOf("object") + ` != '' : ` +
	allocatedOf("object") + ` != ` + allocatedOf("oldObject")

func allocatedOf(obj string) string {
	return fmt.Sprintf(`(has(%[1]s.metadata.annotations) && '%[2]s' in %[1]s.metadata.annotations ? %[1]s.metadata.annotations['%[2]s'] : '')`,
		obj, workerv1.AnnotationAllocated)
}

// AllocationGuard refuses a Pod write that sets or changes the cards annotation
// (device.gpustack.ai/accelerator.allocated) unless the worker makes it: the ledger and the device plugin read
// the cards a Pod holds from it, so a Pod's owner who wrote it could move its charge onto cards it does not use.
type AllocationGuard struct {
	// Worker is the only user that may write the annotation.
	Worker string
}

// ValidateCreate refuses a Pod created with the annotation by anyone but the worker.
func (g *AllocationGuard) ValidateCreate(ctx context.Context, pod *corev1.Pod) (admission.Warnings, error) {
	return nil, g.check(ctx, pod, "", pod.Annotations[workerv1.AnnotationAllocated])
}

// ValidateUpdate refuses a change of the annotation by anyone but the worker.
func (g *AllocationGuard) ValidateUpdate(ctx context.Context, old, pod *corev1.Pod) (admission.Warnings, error) {
	return nil, g.check(ctx, pod, old.Annotations[workerv1.AnnotationAllocated], pod.Annotations[workerv1.AnnotationAllocated])
}

// ValidateDelete allows every delete.
func (g *AllocationGuard) ValidateDelete(context.Context, *corev1.Pod) (admission.Warnings, error) {
	return nil, nil
}

func (g *AllocationGuard) check(ctx context.Context, pod *corev1.Pod, before, after string) error {
	if before == after {
		return nil
	}
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if req.UserInfo.Username == g.Worker {
		return nil
	}
	path := field.NewPath("metadata", "annotations").Key(workerv1.AnnotationAllocated)
	return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, pod.Name, field.ErrorList{field.Forbidden(path,
		fmt.Sprintf("only the operator's worker (%s) records which cards a Pod holds; %s may not", g.Worker, req.UserInfo.Username))})
}
