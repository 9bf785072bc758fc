package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/composer"
)

// DispatchFieldManager is the field manager of what the gateway writes on the manager cluster.
const DispatchFieldManager = "gpustack-worker-gateway"

// resync is how often everything is applied again even when nothing the gateway read changed, so an object
// someone changed or deleted by hand comes back.
const resync = 5 * time.Minute

// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=resourceflavors;clusterqueues;localqueues;admissionchecks;multikueueclusters;multikueueconfigs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=instancetypes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=instancetypes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=kueue-system,resources=secrets,verbs=create;patch;delete

// The gateway's replicas elect the one that dispatches with a Lease in their namespace.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=gpustack-system,resources=leases,verbs=create
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=gpustack-system,resources=leases,verbs=get;update,resourceNames=gpustack-operator-worker-gateway
// +kubebuilder:rbac:groups="",namespace=gpustack-system,resources=events,verbs=create;patch

// Dispatcher keeps, on the manager cluster, what MultiKueue needs to send Instances to the members the
// Gateway reads (Dispatch): the members' kubeconfigs in Kueue's namespace, a MultiKueueCluster per member,
// and per type its InstanceType, queue, MultiKueue check and config, and entrance LocalQueues.
type Dispatcher struct {
	// Client writes on the manager cluster and reads its member Secrets.
	Client client.Client
	// Gateway is what the members last answered.
	Gateway *Gateway
	// Namespace holds the member Secrets; KueueNamespace is the manager's Kueue's namespace.
	Namespace, KueueNamespace string
	// Interval is how often the members' answers are looked at.
	Interval time.Duration
	// Retention is how long what no member offers any more (a member removed for good, a type it deleted) is
	// kept before it is removed: a member's outage, restart or re-registration is shorter, and never takes
	// from the manager the types its Instances run on.
	Retention time.Duration
	// FirstAnswerGrace is how long after start the dispatcher waits for every member's first answer before it
	// writes; DefaultFirstAnswerGrace when zero.
	FirstAnswerGrace time.Duration
	// Log reports what cannot be written.
	Log logr.Logger

	// applied is the hash of each object as last applied, by kind/namespace/name: an object is written again
	// only when it changes.
	applied    map[string]string
	lastResync time.Time
	off        bool
	started    time.Time
}

// DefaultFirstAnswerGrace is how long after start the dispatcher waits for every member's first answer
// before it writes: a member not read yet offers nothing yet, and the manager's types would be marked as no
// longer offered (and say so) only to be taken back a moment later.
const DefaultFirstAnswerGrace = 2 * time.Minute

// Run syncs every Interval until ctx ends. A manager without MultiKueue's API (no Kueue there) is reported
// once and looked at again each Interval.
func (d *Dispatcher) Run(ctx context.Context) error {
	if d.Interval <= 0 {
		return errors.Errorf("the dispatch interval (%s) must be positive", d.Interval)
	}
	for {
		if err := d.Sync(ctx); err != nil {
			d.Log.Error(err, "cannot dispatch to the members; trying again")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(d.Interval):
		}
	}
}

// Sync writes what Dispatch wants and removes what it no longer wants.
func (d *Dispatcher) Sync(ctx context.Context) error {
	if _, err := d.Client.RESTMapper().RESTMapping(kueue.SchemeGroupVersion.WithKind("MultiKueueCluster").GroupKind(), kueue.SchemeGroupVersion.Version); err != nil {
		if apimeta.IsNoMatchError(err) {
			if !d.off {
				d.Log.Info("this cluster serves no MultiKueue API (is Kueue installed?): Instances are not dispatched to the members")
			}
			d.off = true
			return nil
		}
		return errors.Wrap(err, "cannot look up the MultiKueue API")
	}
	d.off = false
	if d.started.IsZero() {
		d.started = time.Now()
	}
	if !d.Gateway.Listed() {
		return nil
	}
	grace := d.FirstAnswerGrace
	if grace == 0 {
		grace = DefaultFirstAnswerGrace
	}
	states, _ := d.Gateway.States()
	for _, st := range states {
		if st.LastSeen.IsZero() && time.Since(d.started) < grace {
			d.Log.V(1).Info("waiting for every member's first answer before dispatching", "member", st.Name)
			return nil
		}
	}
	if d.applied == nil || time.Since(d.lastResync) > resync {
		d.applied, d.lastResync = map[string]string{}, time.Now()
	}
	namespaces, err := composer.UserNamespaces(ctx, d.Client)
	if err != nil {
		return err
	}
	configs, err := d.configs(ctx)
	if err != nil {
		return err
	}
	plan := Dispatch(states, namespaces, configs)
	secrets, err := d.kubeconfigs(ctx)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	var errs []error
	apply := func(o client.Object) {
		key := keyOf(o)
		want[key] = true
		if err := d.apply(ctx, key, o); err != nil {
			errs = append(errs, err)
		}
	}
	for i := range secrets {
		apply(&secrets[i])
	}
	apply(&plan.Flavor)
	for i := range plan.Clusters {
		apply(&plan.Clusters[i])
	}
	for i := range plan.Types {
		t := &plan.Types[i]
		apply(&t.Config)
		apply(&t.Check)
		apply(&t.ClusterQueue)
		for j := range t.LocalQueues {
			apply(&t.LocalQueues[j])
		}
		apply(&t.InstanceType)
		if err := d.applyStatus(ctx, &t.InstanceType); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, d.prune(ctx, want), d.notes(ctx, states))
	return errors.Join(errs...)
}

// configs returns the clusters of each MultiKueueConfig the gateway keeps, by type.
func (d *Dispatcher) configs(ctx context.Context) (map[string][]string, error) {
	var list kueue.MultiKueueConfigList
	if err := d.Client.List(ctx, &list, client.MatchingLabels{gatewayv1.LabelDispatch: "true"}); err != nil {
		return nil, errors.Wrap(err, "cannot list the MultiKueueConfigs the gateway keeps")
	}
	out := make(map[string][]string, len(list.Items))
	for _, c := range list.Items {
		if c.DeletionTimestamp == nil {
			out[c.Name] = c.Spec.Clusters
		}
	}
	return out, nil
}

// kubeconfigs copies each member Secret's checked kubeconfig (ParseMemberKubeconfig: its server, CA and inline
// credentials, nothing else) into Kueue's namespace, where its MultiKueueCluster reads it. A refused one is not
// copied; the member's state says why.
func (d *Dispatcher) kubeconfigs(ctx context.Context) ([]corev1.Secret, error) {
	var members corev1.SecretList
	if err := d.Client.List(ctx, &members, client.InNamespace(d.Namespace), client.MatchingLabels{gatewayv1.LabelMember: "true"}); err != nil {
		return nil, errors.Wrapf(err, "cannot list the member Secrets in %s", d.Namespace)
	}
	out := make([]corev1.Secret, 0, len(members.Items))
	for _, m := range members.Items {
		kc, err := ParseMemberKubeconfig(m.Data[gatewayv1.KubeconfigKey])
		if err != nil {
			continue
		}
		data, err := kc.Kubeconfig()
		if err != nil {
			return nil, err
		}
		out = append(out, corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: d.KueueNamespace, Name: MemberKubeconfigSecret(m.Name), Labels: map[string]string{gatewayv1.LabelDispatch: "true"}},
			Data:       map[string][]byte{"kubeconfig": data}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// apply server-side applies o unless it was applied as it is since the last resync.
func (d *Dispatcher) apply(ctx context.Context, key string, o client.Object) error {
	u, err := scheme.ForApply(o)
	if err != nil {
		return err
	}
	hash, err := hashOf(u.Object)
	if err != nil {
		return err
	}
	if d.applied[key] == hash {
		return nil
	}
	//nolint:staticcheck // client.Apply with unstructured objects is the documented way to server-side apply them.
	if err := d.Client.Patch(ctx, u, client.Apply, client.FieldOwner(DispatchFieldManager), client.ForceOwnership); err != nil {
		delete(d.applied, key)
		return errors.Wrapf(err, "cannot apply %s", key)
	}
	d.applied[key] = hash
	return nil
}

// applyStatus server-side applies a dispatched InstanceType's status (the worker's composer leaves these
// types alone, so the gateway is their status's only writer).
func (d *Dispatcher) applyStatus(ctx context.Context, it *workerv1.InstanceType) error {
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&it.Status)
	if err != nil {
		return errors.Wrap(err, "cannot convert the status to apply")
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": it.APIVersion, "kind": it.Kind,
		"metadata": map[string]any{"name": it.Name}, "status": st}}
	key := "status/" + keyOf(it)
	hash, err := hashOf(u.Object)
	if err != nil {
		return err
	}
	if d.applied[key] == hash {
		return nil
	}
	//nolint:staticcheck // as in apply.
	if err := d.Client.Status().Patch(ctx, u, client.Apply, client.FieldOwner(DispatchFieldManager), client.ForceOwnership); err != nil {
		delete(d.applied, key)
		return errors.Wrapf(err, "cannot apply the status of InstanceType %s", it.Name)
	}
	d.applied[key] = hash
	return nil
}

// prune keeps what carries gatewayv1.LabelDispatch and is not wanted for Retention, marked with when that was
// noticed (a mirrored InstanceType turns Inactive, saying until when it is kept), then deletes it; what is
// wanted again loses the mark.
//
// The kubeconfig copies are not listed: the gateway may not read Secrets in Kueue's namespace (with the chart's
// Kueue that is the operator's own, holding the webhook key and Helm's releases). Each copy goes with its
// member's MultiKueueCluster.
func (d *Dispatcher) prune(ctx context.Context, want map[string]bool) error {
	lists := []client.ObjectList{&kueue.ResourceFlavorList{}, &kueue.MultiKueueClusterList{}, &kueue.MultiKueueConfigList{},
		&kueue.AdmissionCheckList{}, &kueue.ClusterQueueList{}, &kueue.LocalQueueList{}, &workerv1.InstanceTypeList{}}
	now := time.Now()
	var errs []error
	for _, list := range lists {
		if err := d.Client.List(ctx, list, client.MatchingLabels{gatewayv1.LabelDispatch: "true"}); err != nil {
			errs = append(errs, errors.Wrap(err, "cannot list what the gateway dispatched"))
			continue
		}
		items, err := apimeta.ExtractList(list)
		if err != nil {
			errs = append(errs, errors.Wrap(err, "cannot read a list"))
			continue
		}
		for _, item := range items {
			o := item.(client.Object)
			gvk, err := d.Client.GroupVersionKindFor(o)
			if err != nil {
				errs = append(errs, errors.Wrap(err, "cannot tell an object's kind"))
				continue
			}
			o.GetObjectKind().SetGroupVersionKind(gvk)
			if o.GetDeletionTimestamp() == nil {
				errs = append(errs, d.retain(ctx, o, want[keyOf(o)], now))
			}
		}
	}
	return errors.Join(errs...)
}

// RetentionFieldManager is the field manager of the gateway's gatewayv1.AnnotationUnwantedSince mark, apart
// from DispatchFieldManager's, so marking an object never takes what the gateway applied from it.
const RetentionFieldManager = "gpustack-worker-gateway-retention"

// retain marks an object no longer wanted, deletes one unwanted for longer than Retention, and unmarks one
// wanted again.
func (d *Dispatcher) retain(ctx context.Context, o client.Object, wanted bool, now time.Time) error {
	key := keyOf(o)
	mark, marked := o.GetAnnotations()[gatewayv1.AnnotationUnwantedSince]
	since, err := time.Parse(time.RFC3339, mark)
	switch {
	case wanted && !marked:
		return nil
	case wanted:
		return errors.Wrapf(d.mark(ctx, o, nil), "cannot take back %s", key)
	case marked && err == nil && now.Sub(since) >= d.Retention:
		d.Log.Info("removing what no member has offered since the retention began", "object", key, "unwantedSince", mark)
		delete(d.applied, key)
		if err := client.IgnoreNotFound(d.Client.Delete(ctx, o)); err != nil {
			return errors.Wrapf(err, "cannot delete %s", key)
		}
		if _, ok := o.(*kueue.MultiKueueCluster); ok {
			return d.deleteKubeconfig(ctx, o.GetName())
		}
		return nil
	case marked && err == nil:
		return nil
	}
	d.Log.Info("keeping what no member offers now until the retention ends", "object", key, "until", now.Add(d.Retention))
	// What was applied is kept as it is: it is applied again in full once wanted.
	delete(d.applied, key)
	delete(d.applied, "status/"+key)
	stamp := now.UTC().Format(time.RFC3339)
	if err := d.mark(ctx, o, map[string]any{gatewayv1.AnnotationUnwantedSince: stamp}); err != nil {
		return errors.Wrapf(err, "cannot mark %s as no longer offered", key)
	}
	it, ok := o.(*workerv1.InstanceType)
	if !ok {
		return nil
	}
	st := it.Status.DeepCopy()
	st.Phase = workerv1.InstanceTypeInactive
	st.PhaseMessage = fmt.Sprintf("no member offers it since %s: kept until %s, what runs keeps running, new Instances wait",
		stamp, now.Add(d.Retention).UTC().Format(time.RFC3339))
	return d.applyStatus(ctx, &workerv1.InstanceType{TypeMeta: it.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: it.Name}, Status: *st})
}

// deleteKubeconfig deletes the copy of a member's kubeconfig in Kueue's namespace, by name.
func (d *Dispatcher) deleteKubeconfig(ctx context.Context, member string) error {
	s := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: d.KueueNamespace, Name: MemberKubeconfigSecret(member)}}
	delete(d.applied, keyOf(s))
	return errors.Wrapf(client.IgnoreNotFound(d.Client.Delete(ctx, s)), "cannot delete %s/%s", s.Namespace, s.Name)
}

// mark applies the given annotations as RetentionFieldManager's only ones (none takes its mark off).
func (d *Dispatcher) mark(ctx context.Context, o client.Object, annotations map[string]any) error {
	meta := map[string]any{"name": o.GetName()}
	if o.GetNamespace() != "" {
		meta["namespace"] = o.GetNamespace()
	}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	gvk := o.GetObjectKind().GroupVersionKind()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind, "metadata": meta}}
	//nolint:staticcheck // as in apply.
	return d.Client.Patch(ctx, u, client.Apply, client.FieldOwner(RetentionFieldManager), client.ForceOwnership)
}

// keyOf names an object by kind, namespace and name.
func keyOf(o client.Object) string {
	return o.GetObjectKind().GroupVersionKind().Kind + "/" + o.GetNamespace() + "/" + o.GetName()
}

func hashOf(v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", errors.Wrap(err, "cannot hash an object")
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}
