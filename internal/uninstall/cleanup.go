// Package uninstall removes what the operator created at run time, which `helm uninstall` does not know of:
// the webhook configurations, the Kueue chain, the NodeFeatures, the counting keys in
// Node status, the finalizers that would pin objects once the worker is gone, and the operator's CRDs with
// every object of theirs. Users' data stays: the claims behind their persistent volumes are orphaned, not
// deleted, unless Options.DeleteVolumes says otherwise. The chart runs it as a post-delete hook when cleanupOnUninstall is true. The device
// agents' DaemonSets go with their namespace, which the chart ships and helm removes.
package uninstall

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/cpuinfo"
	"github.com/gpustack/gpustack-operator/internal/webhooks"
)

// Options say what to remove beyond what the operator always creates.
type Options struct {
	// Namespace is the worker's namespace, where its webhook Secret is.
	Namespace string
	// WebhookSecret is the worker's webhook key pair.
	WebhookSecret string
	// WorkerPods selects the worker's Pods in Namespace: the cleanup waits until they are gone, or the worker
	// would put back what it removes. Empty waits for nothing.
	WorkerPods string
	// Timeout bounds each wait: for the worker's Pods and for the CRDs to go.
	Timeout time.Duration
	// Log receives one line per object removed, and one per claim kept.
	Log io.Writer
	// DeleteVolumes deletes the claims of the users' InstancePersistentVolumes with them; by default they are
	// kept, orphaned, and named in the log.
	DeleteVolumes bool

	// What the controllers name (passed in, as nothing but the binary's main imports a controller):
	// ComposedAnnotation marks the Kueue objects the composer made; CapacityFieldManager owns the counting
	// keys in Node status; AdmissionCheck is the per-card check.
	ComposedAnnotation, CapacityFieldManager, AdmissionCheck string
}

// What the chart ships (the agents' namespace, account and roles) helm removes itself; the cleanup deletes
// only what the worker made, by name where it has one.
// +kubebuilder:rbac:groups="",namespace=gpustack-system,resources=secrets,verbs=delete,resourceNames=gpustack-worker-webhook-tls;gpustack-operator-worker-gateway-tls;gpustack-operator-worker-gateway-answers
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=delete,resourceNames=gpustack-worker-mutation;gpustack-worker-validation
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=patch
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=*,verbs=list;patch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=localqueues;clusterqueues;resourceflavors;admissionchecks,verbs=list;delete;patch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=admissionchecks,verbs=get
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=*,verbs=list;patch
// +kubebuilder:rbac:groups=nfd.k8s-sigs.io,resources=nodefeatures,verbs=list;delete
// +kubebuilder:rbac:groups=nfd.k8s-sigs.io,resources=nodefeaturerules,verbs=delete,resourceNames=gpustack-cpu-info
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=list;patch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=list
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;delete,resourceNames=devices.worker.gpustack.ai;instanceimagepullsecrets.worker.gpustack.ai;instancepersistentvolumes.worker.gpustack.ai;instancepersistentvolumetypes.worker.gpustack.ai;instances.worker.gpustack.ai;instancesshpublickeys.worker.gpustack.ai;instancetypeflavors.worker.gpustack.ai;instancetypes.worker.gpustack.ai;settings.worker.gpustack.ai

// Cleanup removes everything the operator created at run time. It goes on past a step that fails and
// returns every failure, so one stuck object does not leave the rest behind; kinds whose CRD is not
// installed are skipped.
func Cleanup(ctx context.Context, c client.Client, o Options) error {
	r := &remover{c: c, log: o.Log, opts: o}
	if r.log == nil {
		r.log = io.Discard
	}
	if err := r.workerGone(ctx); err != nil {
		return err
	}
	r.delete(ctx, &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: webhooks.MutatingName}})
	r.delete(ctx, &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: webhooks.ValidatingName}})
	r.delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.WebhookSecret}})
	// The worker-gateway's serving certificate, which its first replica signed (its APIService is the chart's),
	// and the members' last answers it kept.
	r.delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: gatewayv1.ServingSecretName}})
	r.delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: gatewayv1.AnswersSecretName}})
	r.kueueChain(ctx)
	r.kueueGone(ctx)
	r.nodeFeatures(ctx)
	r.nodeCapacity(ctx)
	r.instancePods(ctx)
	if !o.DeleteVolumes {
		r.keepClaims(ctx)
	}
	r.crds(ctx, o.Timeout)
	return errors.Join(r.errs...)
}

// workerGone waits until the worker's Pods are gone.
func (r *remover) workerGone(ctx context.Context) error {
	if r.opts.WorkerPods == "" {
		return nil
	}
	selector, err := labels.Parse(r.opts.WorkerPods)
	if err != nil {
		return errors.Wrapf(err, "worker pod selector %q", r.opts.WorkerPods)
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, r.opts.Timeout, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := r.c.List(ctx, pods, client.InNamespace(r.opts.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	})
	if err != nil {
		return errors.Wrapf(err, "the worker's pods (%s) are not gone after %s", r.opts.WorkerPods, r.opts.Timeout)
	}
	fmt.Fprintln(r.log, "the worker is gone")
	return nil
}

// remover deletes objects, logging each and collecting failures.
type remover struct {
	c    client.Client
	opts Options
	log  io.Writer
	errs []error
}

func (r *remover) fail(err error) {
	if err != nil && !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
		r.errs = append(r.errs, err)
	}
}

// delete deletes an object, leaving what it owns to the garbage collector; a missing one is not an error.
func (r *remover) delete(ctx context.Context, obj client.Object) {
	err := r.c.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err == nil {
		fmt.Fprintf(r.log, "deleted %T %s\n", obj, client.ObjectKeyFromObject(obj))
	}
	r.fail(err)
}

// unpin removes an object's finalizers, which nothing will remove once the operator (or Kueue) is gone.
func (r *remover) unpin(ctx context.Context, obj client.Object) {
	if len(obj.GetFinalizers()) == 0 {
		return
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	obj.SetFinalizers(nil)
	r.fail(client.IgnoreNotFound(r.c.Patch(ctx, obj, patch)))
}

// kueueChain deletes the queues and flavors the composer made (they carry its hash) and the admission check.
func (r *remover) kueueChain(ctx context.Context) {
	lists := []client.ObjectList{&kueue.LocalQueueList{}, &kueue.ClusterQueueList{}, &kueue.ResourceFlavorList{}}
	for _, list := range lists {
		if err := r.c.List(ctx, list); err != nil {
			r.fail(err)
			continue
		}
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			obj := o.(client.Object)
			if _, ours := obj.GetAnnotations()[r.opts.ComposedAnnotation]; ours {
				r.delete(ctx, obj)
				r.unpin(ctx, obj)
			}
			return nil
		})
	}
	// Kueue's finalizer stays on the check when Kueue goes with the release.
	ac := &kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: r.opts.AdmissionCheck}}
	r.delete(ctx, ac)
	err := r.c.Get(ctx, client.ObjectKeyFromObject(ac), ac)
	if err != nil {
		r.fail(errors.Wrapf(err, "cannot get AdmissionCheck %s to remove its finalizers", ac.Name))
		return
	}
	r.unpin(ctx, ac)
}

// kueueGone unpins every object of Kueue's kinds whose CRD is being deleted (by an administrator: the chart
// keeps the CRDs of the Kueue it brings), as with Kueue's controller gone nothing else removes its finalizers
// and those CRDs would stay Terminating for ever. A Kueue that stays, or CRDs that are kept, are left alone.
func (r *remover) kueueGone(ctx context.Context) {
	list := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := r.c.List(ctx, list); err != nil {
		r.fail(err)
		return
	}
	for _, crd := range list.Items {
		if crd.Spec.Group == kueue.SchemeGroupVersion.Group && crd.DeletionTimestamp != nil {
			r.unpinAll(ctx, crd)
		}
	}
}

// nodeFeatures deletes the worker's, the device managers' and the CPU reporters' NodeFeatures, in every
// namespace, and the worker's NodeFeatureRule.
func (r *remover) nodeFeatures(ctx context.Context) {
	r.delete(ctx, &nfdv1alpha1.NodeFeatureRule{ObjectMeta: metav1.ObjectMeta{Name: cpuinfo.RuleName}})
	list := &nfdv1alpha1.NodeFeatureList{}
	if err := r.c.List(ctx, list); err != nil {
		r.fail(err)
		return
	}
	for i := range list.Items {
		// The worker's (gpustack-operator-worker) and the device managers' (gpustack-operator-device-manager).
		if strings.HasPrefix(list.Items[i].Labels["app.kubernetes.io/part-of"], "gpustack-operator") {
			r.delete(ctx, &list.Items[i])
		}
	}
}

// nodeCapacity gives up the counting keys in every Node's status: applying nothing as their field manager
// removes the fields it owned.
func (r *remover) nodeCapacity(ctx context.Context) {
	list := &corev1.NodeList{}
	if err := r.c.List(ctx, list); err != nil {
		r.fail(err)
		return
	}
	for _, n := range list.Items {
		empty := &unstructured.Unstructured{}
		empty.SetAPIVersion("v1")
		empty.SetKind("Node")
		empty.SetName(n.Name)
		//nolint:staticcheck // client.Apply with an unstructured object that carries its TypeMeta.
		r.fail(r.c.Status().Patch(ctx, empty, client.Apply, client.FieldOwner(r.opts.CapacityFieldManager), client.ForceOwnership))
	}
}

// instancePods unpins the Instances' Pods, which Kueue's finalizer would hold once Kueue is gone; the Pods
// themselves go with their Instances.
func (r *remover) instancePods(ctx context.Context) {
	r.unpinList(ctx, &corev1.PodList{}, client.HasLabels{workerv1.LabelInstance})
}

// keepClaims orphans the claims of the users' InstancePersistentVolumes, which own them: deleting the
// operator's CRDs would otherwise have the garbage collector delete the claims, and the users' data with them.
// Each kept claim is named in the log.
func (r *remover) keepClaims(ctx context.Context) {
	list := &corev1.PersistentVolumeClaimList{}
	if err := r.c.List(ctx, list); err != nil {
		r.fail(err)
		return
	}
	for i := range list.Items {
		pvc := &list.Items[i]
		var kept []metav1.OwnerReference
		for _, ref := range pvc.OwnerReferences {
			if ref.Kind != "InstancePersistentVolume" || !strings.HasPrefix(ref.APIVersion, workerv1.GroupVersion.Group+"/") {
				kept = append(kept, ref)
			}
		}
		if len(kept) == len(pvc.OwnerReferences) {
			continue
		}
		patch := client.MergeFrom(pvc.DeepCopy())
		pvc.OwnerReferences = kept
		if err := r.c.Patch(ctx, pvc, patch); err != nil {
			r.fail(client.IgnoreNotFound(err))
			continue
		}
		fmt.Fprintf(r.log, "kept PersistentVolumeClaim %s (a user's volume: its data stays; delete it when no longer needed)\n",
			client.ObjectKeyFromObject(pvc))
	}
}

// unpinAll removes the finalizers of every object of a CRD, read at its storage version (another would need a
// conversion webhook, whose server may be gone).
func (r *remover) unpinAll(ctx context.Context, crd apiextensionsv1.CustomResourceDefinition) {
	version := crd.Spec.Versions[0].Name
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			version = v.Name
		}
	}
	objs := &unstructured.UnstructuredList{}
	objs.SetAPIVersion(crd.Spec.Group + "/" + version)
	objs.SetKind(crd.Spec.Names.ListKind)
	r.unpinList(ctx, objs)
}

// unpinList removes the finalizers of every object the list finds.
func (r *remover) unpinList(ctx context.Context, list client.ObjectList, opts ...client.ListOption) {
	if err := r.c.List(ctx, list, opts...); err != nil {
		r.fail(err)
		return
	}
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		r.unpin(ctx, o.(client.Object))
		return nil
	})
}

// crds unpins every object of the operator's kinds, deletes the CRDs (which deletes the objects) and waits
// until they are gone.
func (r *remover) crds(ctx context.Context, timeout time.Duration) {
	list := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := r.c.List(ctx, list); err != nil {
		r.fail(err)
		return
	}
	var ours []apiextensionsv1.CustomResourceDefinition
	for _, crd := range list.Items {
		if crd.Spec.Group == workerv1.GroupVersion.Group {
			ours = append(ours, crd)
		}
	}
	for _, crd := range ours {
		r.unpinAll(ctx, crd)
		r.delete(ctx, &crd)
	}
	if timeout <= 0 {
		return
	}
	var waiting []string
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		waiting = nil
		for _, crd := range ours {
			got := &apiextensionsv1.CustomResourceDefinition{}
			err := r.c.Get(ctx, client.ObjectKeyFromObject(&crd), got)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				waiting = append(waiting, crd.Name+" ("+err.Error()+")")
				continue
			}
			// Whatever put a finalizer back since (a worker replica still stopping) is unpinned again.
			r.unpinAll(ctx, crd)
			why := "still there"
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Terminating {
					why = c.Reason + ": " + c.Message
				}
			}
			waiting = append(waiting, crd.Name+" ("+why+")")
		}
		return len(waiting) == 0, nil
	})
	if err != nil {
		r.errs = append(r.errs, errors.Errorf("the operator's CRDs are not gone after %s: %s", timeout, strings.Join(waiting, "; ")))
		return
	}
	fmt.Fprintln(r.log, "the operator's CRDs are gone")
}
