// Package instance runs Instances: each becomes a Pod in its namespace, queued on its type's entrance
// LocalQueue, and its status tells, in one line, what it is waiting for.
package instance

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/instancepod"
	"github.com/gpustack/gpustack-operator/internal/metrics"
	"github.com/gpustack/gpustack-operator/internal/settings"
)

// Reconciler keeps each Instance's Pod and status.
type Reconciler struct {
	Client   client.Client
	Recorder record.EventRecorder
	// Now is the clock that paces rebuilding a Pod that failed or is stranded; time.Now when nil.
	Now func() time.Time

	// noMatchSince holds, by Pod UID, since when an admitted Pod that waits for the scheduler has matched no
	// node. It is lost with the process: a new leader waits out the grace again, which only delays a rebuild.
	noMatchSince sync.Map
}

// now reads the reconciler's clock.
func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=instances,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=instances/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile creates or removes the Instance's Pod and writes its status when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	inst := &workerv1.Instance{}
	if err := r.Client.Get(ctx, req.NamespacedName, inst); err != nil {
		if apierrors.IsNotFound(err) {
			metrics.ForgetInstance(req.String())
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if inst.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	values, _, err := settings.Load(ctx, r.Client)
	if err != nil {
		return reconcile.Result{}, err
	}
	pod := &corev1.Pod{}
	err = r.Client.Get(ctx, req.NamespacedName, pod)
	switch {
	case apierrors.IsNotFound(err):
		pod = nil
	case err != nil:
		return reconcile.Result{}, errors.Wrap(err, "cannot get the Instance's Pod")
	case !metav1.IsControlledBy(pod, inst):
		return reconcile.Result{}, r.setStatus(ctx, inst, values, workerv1.InstanceStarting,
			fmt.Sprintf("a Pod named %s that this Instance does not own is in the way", pod.Name), nil)
	}
	why, recheck, err := r.mustRebuild(ctx, inst, pod)
	if err != nil {
		return reconcile.Result{}, err
	}
	if why != "" {
		return r.rebuild(ctx, inst, values, pod, why)
	}

	if res, done, err := r.heldBySystem(ctx, inst, values, pod); done {
		return res, err
	}
	if inst.Spec.Stop {
		if pod != nil && pod.DeletionTimestamp == nil {
			if err := r.Client.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, errors.Wrap(err, "cannot delete the Instance's Pod")
			}
		}
		if pod != nil {
			return reconcile.Result{}, r.setStatus(ctx, inst, values, workerv1.InstanceStopping, "stopping: waiting for the Pod to go", pod)
		}
		return reconcile.Result{}, r.setStatus(ctx, inst, values, workerv1.InstanceStopped, "", nil)
	}
	if pod == nil {
		created, res, err := r.start(ctx, inst, values)
		if created == nil {
			return res, err
		}
		pod = created
	}
	phase, msg := Phase(pod)
	st := inst.Status.DeepCopy()
	st.Cluster = ""
	if gated(pod) {
		// The Service waits for the Pod to run here: a Pod that waits for quota holds no node port, and one a
		// manager cluster dispatched is reached through the member's Service.
		wl, err := r.workloadOf(ctx, pod)
		if err != nil {
			return reconcile.Result{}, err
		}
		msg = WaitMessage(pod, wl)
		if wl != nil && wl.Status.ClusterName != nil {
			// A manager cluster's Kueue keeps the Pod gated and MultiKueue copies the status of the member's Pod
			// onto it.
			st.Cluster = *wl.Status.ClusterName
			phase, msg = DispatchedPhase(pod, st.Cluster)
		}
	} else {
		ports, err := r.ensureService(ctx, inst)
		if err != nil {
			return reconcile.Result{}, err
		}
		if ports != nil {
			st.Ports = ports
		}
	}
	return reconcile.Result{RequeueAfter: recheck}, r.setStatusFrom(ctx, inst, st, values, phase, msg, pod)
}

// start creates the Instance's Pod once its credentials and claims let it; while they do not (or the Pod cannot
// be made yet), it returns no Pod and the result Reconcile returns, with the Instance's status saying why.
func (r *Reconciler) start(ctx context.Context, inst *workerv1.Instance, values settings.Values) (*corev1.Pod, reconcile.Result, error) {
	if msg, err := r.credentialsHold(ctx, inst); err != nil || msg != "" {
		if err != nil {
			return nil, reconcile.Result{}, err
		}
		// The credential's own event brings the Instance back once it is Ready.
		return nil, reconcile.Result{}, r.setStatus(ctx, inst, values, workerv1.InstanceStarting, msg, nil)
	}
	if msg, err := r.claimsHold(ctx, inst, values); err != nil || msg != "" {
		if err != nil {
			return nil, reconcile.Result{}, err
		}
		// Claims bind outside this controller's watch: look again in a while.
		return nil, reconcile.Result{RequeueAfter: claimRecheck}, r.setStatus(ctx, inst, values, workerv1.InstanceStarting, msg, nil)
	}
	created, msg, err := r.createPod(ctx, inst, values)
	if err != nil {
		return nil, reconcile.Result{}, err
	}
	if created == nil {
		return nil, reconcile.Result{}, r.setStatus(ctx, inst, values, workerv1.InstanceStarting, msg, nil)
	}
	return created, reconcile.Result{}, nil
}

// claimRecheck is how often an Instance held by an unbound claim looks at it again.
const claimRecheck = 10 * time.Second

// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch

// claimsHold returns why the Instance's persistent volumes keep it from starting, "" when they do not: with
// instance-persistent-volume-placement on, a claim must exist and be bound, unless its StorageClass binds
// when a Pod first uses it. A bound claim then decides where the Pod can run.
func (r *Reconciler) claimsHold(ctx context.Context, inst *workerv1.Instance, values settings.Values) (string, error) {
	if !values.Bool(workerv1.SettingInstancePersistentVolumePlace) {
		return "", nil
	}
	var names []string
	if p := inst.Spec.Volume.Persistent; p != nil {
		names = append(names, p.Name)
	}
	for _, a := range inst.Spec.AdditionalVolumes {
		if a.Persistent != nil {
			names = append(names, a.Persistent.Name)
		}
	}
	for _, name := range names {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: name}, pvc); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Sprintf("waiting for volume %s: no InstancePersistentVolume or claim of that name in namespace %s", name, inst.Namespace), nil
			}
			return "", errors.Wrap(err, "cannot get a claim")
		}
		if pvc.Status.Phase == corev1.ClaimBound {
			continue
		}
		if pvc.Spec.StorageClassName != nil && *pvc.Spec.StorageClassName != "" {
			sc := &storagev1.StorageClass{}
			if err := r.Client.Get(ctx, client.ObjectKey{Name: *pvc.Spec.StorageClassName}, sc); err == nil &&
				sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
				continue
			}
		}
		return fmt.Sprintf("waiting for volume %s: its claim is %s, not bound", name, pvc.Status.Phase), nil
	}
	return "", nil
}

// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create

// ensureService creates the Service of an Instance that asks for ports and copies its node ports to the
// status. The ports are immutable while the Instance runs, so an existing Service is kept as it is.
func (r *Reconciler) ensureService(ctx context.Context, inst *workerv1.Instance) ([]workerv1.InstanceStatusPort, error) {
	want := instancepod.Service(inst)
	if want == nil {
		return nil, nil
	}
	svc := &corev1.Service{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), svc)
	if apierrors.IsNotFound(err) {
		if err := controllerutil.SetControllerReference(inst, want, r.Client.Scheme()); err != nil {
			return nil, errors.Wrap(err, "cannot own the Service")
		}
		// The Service's event brings the node ports back here.
		return nil, errors.Wrap(client.IgnoreAlreadyExists(r.Client.Create(ctx, want)), "cannot create the Instance's Service")
	}
	if err != nil {
		return nil, errors.Wrap(err, "cannot get the Instance's Service")
	}
	return instancepod.StatusPorts(inst.Spec.Ports, instancepod.ServiceAccess(svc, nil)), nil
}

// heldBySystem stops an Instance whose type goes (drain) and keeps one whose queue drains from creating its Pod
// (queueDrains); done says the reconcile ends here, with res and err.
func (r *Reconciler) heldBySystem(ctx context.Context, inst *workerv1.Instance, values settings.Values, pod *corev1.Pod) (res reconcile.Result, done bool, err error) {
	if inst.Spec.Stop {
		return reconcile.Result{}, false, nil
	}
	drained, err := r.drain(ctx, inst)
	if err != nil || drained {
		// Stopping the Instance changes it, which brings it back here.
		return reconcile.Result{}, true, err
	}
	if pod != nil {
		return reconcile.Result{}, false, nil
	}
	held, err := r.queueDrains(ctx, inst, values)
	if err != nil || held {
		// The type's phase changes when its queue stops draining, which brings the Instance back here; the
		// queue itself is not watched, and may reach the cache after the type: look again in a while too.
		return reconcile.Result{RequeueAfter: heldRecheck}, true, err
	}
	return reconcile.Result{}, false, nil
}

// drain stops an Instance whose type is being deleted or is gone, so the type's queue can drain and go. It
// writes spec.stop, as the walkthrough's Step 4 shows: the type's deletion lasts, and the Instance can only run
// again pointed at another type, which its spec allows while it is stopped.
func (r *Reconciler) drain(ctx context.Context, inst *workerv1.Instance) (bool, error) {
	it := &workerv1.InstanceType{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: inst.Spec.Type}, it)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, errors.Wrap(err, "cannot get the instance type")
	case it.DeletionTimestamp == nil:
		return false, nil
	}
	inst.Spec.Stop = true
	if err := r.Client.Update(ctx, inst); err != nil {
		return false, errors.Wrap(client.IgnoreNotFound(err), "cannot stop the Instance")
	}
	r.Recorder.Eventf(inst, corev1.EventTypeNormal, "Drained", "stopped: instance type %s is being deleted or is gone", inst.Spec.Type)
	return true, nil
}

// queueDrains keeps an Instance with no Pod from creating one while its type's queue drains (HoldAndDrain: a
// pool that lost its flavors for longer than its grace period). Nothing is written into the user's spec: the
// Instance reads Stopped with the reason, and starts by itself once the queue admits again (the pool's nodes
// are back). An administrator's Hold (the type's spec.inactive) stops nothing: the Pod queues.
func (r *Reconciler) queueDrains(ctx context.Context, inst *workerv1.Instance, values settings.Values) (bool, error) {
	cq := &kueue.ClusterQueue{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: inst.Spec.Type}, cq); err != nil {
		return false, errors.Wrap(client.IgnoreNotFound(err), "cannot get the instance type's ClusterQueue")
	}
	if cq.Spec.StopPolicy == nil || *cq.Spec.StopPolicy != kueue.HoldAndDrain {
		return false, nil
	}
	msg := fmt.Sprintf("held by the system: the queue of instance type %s drains (HoldAndDrain); the Instance starts again by itself once the queue admits", inst.Spec.Type)
	if inst.Status.Phase != workerv1.InstanceStopped || inst.Status.PhaseMessage != msg {
		r.Recorder.Eventf(inst, corev1.EventTypeNormal, ReasonQueueDrains, "held: the queue of instance type %s drains (HoldAndDrain)", inst.Spec.Type)
	}
	return true, r.setStatus(ctx, inst, values, workerv1.InstanceStopped, msg, nil)
}

// heldRecheck is how often an Instance held while its queue drains looks at the queue again.
const heldRecheck = 15 * time.Second

// ReasonQueueDrains is the event of an Instance the system holds while its type's queue drains.
const ReasonQueueDrains = "QueueDrains"

// createPod renders and creates the Pod. When the Instance cannot run yet (no such type, a pin to a node
// without a hostname label, a field the type cannot serve) it returns no Pod and the reason.
func (r *Reconciler) createPod(ctx context.Context, inst *workerv1.Instance, values settings.Values) (*corev1.Pod, string, error) {
	it := &workerv1.InstanceType{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: inst.Spec.Type}, it); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("instance type %s does not exist", inst.Spec.Type), nil
		}
		return nil, "", errors.Wrap(err, "cannot get the instance type")
	}
	o := instancepod.Options{Overcommit: values.Bool(workerv1.SettingInstanceGeneralOvercommit),
		SSHImage: values[workerv1.SettingInstanceSSHServerImage],
		BuiltIn: instancepod.BuiltInImages{Registry: values[workerv1.SettingContainerRegistry],
			Namespace: values[workerv1.SettingContainerNamespace], PullSecrets: instancepod.SplitList(values[workerv1.SettingImagePullSecrets]),
			PullPolicy: corev1.PullPolicy(values[workerv1.SettingImagePullPolicy]), Auth: values[workerv1.SettingContainerRegistryAuth]}}
	var err error
	if o.RuntimeClasses, err = r.runtimeClasses(ctx); err != nil {
		return nil, "", err
	}
	if inst.Spec.NodeName != "" {
		node := &corev1.Node{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: inst.Spec.NodeName}, node); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Sprintf("spec.nodeName: node %s does not exist", inst.Spec.NodeName), nil
			}
			return nil, "", errors.Wrap(err, "cannot get the pinned node")
		}
		o.NodeHostname = node.Labels[corev1.LabelHostname]
		flavors, err := r.poolFlavors(ctx, it.Name)
		if err != nil {
			return nil, "", err
		}
		o.NodeFlavorLabels = instancepod.FlavorLabelsOf(node.Labels, flavors)
	}
	pod, err := instancepod.Pod(inst, it, o)
	if err != nil {
		r.Recorder.Event(inst, corev1.EventTypeWarning, "CannotRender", err.Error())
		return nil, err.Error(), nil
	}
	if err := controllerutil.SetControllerReference(inst, pod, r.Client.Scheme()); err != nil {
		return nil, "", errors.Wrap(err, "cannot own the Pod")
	}
	if err := r.ensureHostKeys(ctx, inst); err != nil {
		return nil, "", err
	}
	if err := r.ensureRegistryAuth(ctx, inst, o); err != nil {
		return nil, "", err
	}
	if err := r.Client.Create(ctx, pod); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Another reconcile created it a moment ago; the Pod's event brings us back.
			return nil, "starting", nil
		}
		// Admission refusals (the Pod rules, Kueue's webhook) are the user's to read.
		r.Recorder.Event(inst, corev1.EventTypeWarning, "PodRejected", err.Error())
		if transient(err) {
			// A webhook that could not be called (no replica answered) or an API server that could not answer
			// refuses nothing for good: the workqueue tries again, with backoff.
			return nil, "", errors.Wrap(err, "cannot create the Instance's Pod")
		}
		return nil, "the Pod was rejected: " + err.Error(), nil
	}
	r.Recorder.Eventf(inst, corev1.EventTypeNormal, "PodCreated", "created Pod %s in queue %s", pod.Name, pod.Labels[workerv1.LabelQueueName])
	return pod, "", nil
}

// transient reports whether a create failed for a cause that passes: the API server's internal error (a
// webhook it could not call), unavailability, a timeout or throttling.
func transient(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err)
}

// +kubebuilder:rbac:groups=node.k8s.io,resources=runtimeclasses,verbs=get;list;watch

// runtimeClasses returns the names of the RuntimeClasses that exist.
func (r *Reconciler) runtimeClasses(ctx context.Context) (map[string]bool, error) {
	var list nodev1.RuntimeClassList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil, errors.Wrap(err, "cannot list RuntimeClasses")
	}
	out := make(map[string]bool, len(list.Items))
	for _, rc := range list.Items {
		out[rc.Name] = true
	}
	return out, nil
}

// +kubebuilder:rbac:groups="",resources=secrets,verbs=create

// ensureHostKeys creates the Instance's host-keys Secret, owned by the Instance, unless it is there. The
// worker may create Secrets but read none outside its namespace, so it asks by creating: a Secret already
// there is kept, whoever made it, and its key is what the sidecar serves.
func (r *Reconciler) ensureHostKeys(ctx context.Context, inst *workerv1.Instance) error {
	secret, err := instancepod.HostKeysSecret(inst)
	if err != nil {
		return err
	}
	if err := controllerutil.SetControllerReference(inst, secret, r.Client.Scheme()); err != nil {
		return errors.Wrap(err, "cannot own the host-keys Secret")
	}
	return errors.Wrap(client.IgnoreAlreadyExists(r.Client.Create(ctx, secret)), "cannot create the Instance's host-keys Secret")
}

// ensureRegistryAuth creates the Instance's pull Secret of container-registry-auth for the registry its SSH
// sidecar is pulled from, owned by the Instance, unless the setting is empty or the Secret is there. Like the
// host keys it is made by creating alone: its name holds a digest of the registry and the credential, so a
// Secret of that name already holds them, and a new credential makes a new Secret for the next Pod (the old
// one goes with the Instance).
func (r *Reconciler) ensureRegistryAuth(ctx context.Context, inst *workerv1.Instance, o instancepod.Options) error {
	secret, err := o.BuiltIn.AuthSecret(inst, o.SSHImage)
	if err != nil || secret == nil {
		return err
	}
	if err := controllerutil.SetControllerReference(inst, secret, r.Client.Scheme()); err != nil {
		return errors.Wrap(err, "cannot own the registry pull Secret")
	}
	return errors.Wrap(client.IgnoreAlreadyExists(r.Client.Create(ctx, secret)), "cannot create the Instance's registry pull Secret")
}

// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=clusterqueues;resourceflavors,verbs=get;list;watch

// poolFlavors returns the nodeLabels of the flavors in the type's ClusterQueue (which has the type's name);
// none while the queue does not exist yet.
func (r *Reconciler) poolFlavors(ctx context.Context, typ string) ([]map[string]string, error) {
	cq := &kueue.ClusterQueue{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: typ}, cq); err != nil {
		return nil, errors.Wrapf(client.IgnoreNotFound(err), "cannot get the ClusterQueue of instance type %s", typ)
	}
	var out []map[string]string
	for _, g := range cq.Spec.ResourceGroups {
		for _, fq := range g.Flavors {
			rf := &kueue.ResourceFlavor{}
			if err := r.Client.Get(ctx, client.ObjectKey{Name: string(fq.Name)}, rf); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return nil, errors.Wrapf(err, "cannot get ResourceFlavor %s", fq.Name)
			}
			out = append(out, rf.Spec.NodeLabels)
		}
	}
	return out, nil
}

// setStatus writes the phase, message and the Pod's placement when they changed.
func (r *Reconciler) setStatus(ctx context.Context, inst *workerv1.Instance, values settings.Values, phase workerv1.InstancePhase, msg string, pod *corev1.Pod) error {
	st := inst.Status.DeepCopy()
	st.Cluster = ""
	return r.setStatusFrom(ctx, inst, st, values, phase, msg, pod)
}

// setStatusFrom writes st, with the phase, message and the Pod's placement (its node, addresses and cards),
// when it differs from the Instance's status.
func (r *Reconciler) setStatusFrom(ctx context.Context, inst *workerv1.Instance, st *workerv1.InstanceStatus, values settings.Values, phase workerv1.InstancePhase, msg string, pod *corev1.Pod) error {
	st.Phase, st.PhaseMessage, st.ObservedGeneration = phase, msg, inst.Generation
	st.NodeName, st.HostIPs, st.PodIPs, st.AccessAddresses, st.Allocations = "", nil, nil, nil, nil
	if pod != nil {
		st.NodeName, st.HostIPs = pod.Spec.NodeName, instancepod.HostIPs(pod)
		for _, ip := range pod.Status.PodIPs {
			st.PodIPs = append(st.PodIPs, ip.IP)
		}
		st.AccessAddresses = instancepod.AccessAddresses(st.HostIPs, values[workerv1.SettingInstanceAccessStaticAddress],
			values[workerv1.SettingInstanceAccessWildcardDNS])
		if st.Cluster != "" {
			// Reached through the member's Service, at the addresses the member's settings give.
			access := memberAccess(pod)
			st.AccessAddresses, st.Ports = access.Addresses, instancepod.StatusPorts(inst.Spec.Ports, access)
		}
		st.Allocations = instancepod.Allocations(pod)
	}
	if phase == workerv1.InstanceReady {
		// A Pod that runs ends a run of rebuilds: the next failure is rebuilt at once.
		st.Rebuilds, st.LastRebuildTime = 0, nil
	}
	apimeta.SetStatusCondition(&st.Conditions, ReadyCondition(phase, msg, inst.Generation))
	metrics.SetInstancePhase(inst.Namespace+"/"+inst.Name, string(phase))
	if apiequality.Semantic.DeepEqual(*st, inst.Status) {
		return nil
	}
	inst.Status = *st
	return errors.Wrap(client.IgnoreNotFound(r.Client.Status().Update(ctx, inst)), "cannot update the Instance's status")
}

// workloadOf returns the Workload Kueue made for the Pod, nil while there is none.
func (r *Reconciler) workloadOf(ctx context.Context, pod *corev1.Pod) (*kueue.Workload, error) {
	// Read without copies, and only the match copied: each gated Instance's reconcile reads every Workload of
	// its namespace, and copying them all was a tenth of the worker's time while hundreds of Instances started.
	var wls kueue.WorkloadList
	if err := r.Client.List(ctx, &wls, client.InNamespace(pod.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, errors.Wrap(err, "cannot list Workloads")
	}
	for i := range wls.Items {
		for _, o := range wls.Items[i].OwnerReferences {
			if o.UID == pod.UID {
				return wls.Items[i].DeepCopy(), nil
			}
		}
	}
	return nil, nil
}

// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=get;list;watch

// typeField indexes Instances by their type.
const typeField = "spec.type"

// SetupWithManager registers the reconciler, woken by its Instances, their Pods, the Pods' Workloads (an
// Instance's Pod has the Instance's name) and their types (a type being deleted drains its Instances).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &workerv1.Instance{}, typeField, func(o client.Object) []string {
		return []string{o.(*workerv1.Instance).Spec.Type}
	}); err != nil {
		return errors.Wrap(err, "cannot index Instances by type")
	}
	byType := r.instancesMatching(func(o client.Object) []client.ListOption {
		return []client.ListOption{client.MatchingFields{typeField: o.GetName()}}
	})
	// Instances are independent of each other and a reconcile mostly waits on the API server: a burst of them
	// is rendered a few at a time rather than one after another.
	b := ctrl.NewControllerManagedBy(mgr).Named("instance").WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		For(&workerv1.Instance{}).Owns(&corev1.Pod{}).Owns(&corev1.Service{}).
		// Only what the Instances read: the type's spec, its deletion, its queue (entrance) and phase. Its views
		// change with every admission, and each change would otherwise enqueue every Instance of the type.
		Watches(&workerv1.InstanceType{}, byType, builder.WithPredicates(predicate.Funcs{UpdateFunc: typeChanged}))
	// CRDs older than this binary (Helm leaves them on upgrade) may not have the credential kinds yet: then
	// nothing is watched, and credentialsHold lets the Pod use the Secret of the name, as before them.
	for _, kind := range []client.Object{&workerv1.InstanceSSHPublicKey{}, &workerv1.InstanceImagePullSecret{}} {
		if Served(mgr, kind) {
			b = b.Watches(kind, r.instancesNaming())
		}
	}
	// The access addresses in every Instance's status follow this cluster's instance-access settings.
	allInstances := r.instancesMatching(func(client.Object) []client.ListOption { return nil })
	return b.
		Watches(&workerv1.Setting{}, allInstances, builder.WithPredicates(accessSettings)).
		Watches(&kueue.Workload{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			var out []reconcile.Request
			for _, ref := range o.GetOwnerReferences() {
				if ref.Kind == "Pod" {
					out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}})
				}
			}
			return out
		})).Complete(r)
}

// instancesMatching enqueues the Instances that the list options for the event's object select.
func (r *Reconciler) instancesMatching(opts func(client.Object) []client.ListOption) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var list workerv1.InstanceList
		if err := r.Client.List(ctx, &list, opts(o)...); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for _, i := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: i.Namespace, Name: i.Name}})
		}
		return out
	})
}

// typeChanged reports whether an InstanceType update touches what its Instances read.
func typeChanged(e event.UpdateEvent) bool {
	old, ok1 := e.ObjectOld.(*workerv1.InstanceType)
	cur, ok2 := e.ObjectNew.(*workerv1.InstanceType)
	if !ok1 || !ok2 {
		return true
	}
	return old.Generation != cur.Generation || !old.DeletionTimestamp.Equal(cur.DeletionTimestamp) ||
		old.Status.Entrance != cur.Status.Entrance || old.Status.Phase != cur.Status.Phase
}
