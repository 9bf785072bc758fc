// Package webhooks serves the worker's admission webhooks: the Instance rules that need the pool
// (validating), the Pod units fold that turns a slice's memory budget into the credits Kueue charges, and
// the enrichment of an authored InstanceType from the catalog (mutating). The rules a Pod alone decides are policies (policies/), not here.
package webhooks

import (
	admissionv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
)

// Paths and configuration names of the webhooks. The mutating configuration's name sorts before Kueue's, so
// the API server folds the units before Kueue reads the Pod.
const (
	InstancePath     = "/validate-instance"
	InstanceTypePath = "/mutate-instancetype"
	PodPath          = "/mutate-pod"
	JobPath          = "/mutate-job"
	PodGuardPath     = "/validate-pod"
	ValidatingName   = "gpustack-worker-validation"
	MutatingName     = "gpustack-worker-mutation"
)

// Setup registers the webhooks with the manager's webhook server.
func Setup(mgr ctrl.Manager) error {
	if err := ctrl.NewWebhookManagedBy(mgr, &workerv1.Instance{}).WithValidator(&InstanceValidator{Reader: mgr.GetClient(), Live: mgr.GetAPIReader(), Reviews: mgr.GetClient()}).
		WithValidatorCustomPath(InstancePath).Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &workerv1.InstanceType{}).WithDefaulter(&InstanceTypeDefaulter{Reader: mgr.GetClient()}).
		WithDefaulterCustomPath(InstanceTypePath).Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &batchv1.Job{}).WithDefaulter(&JobFolder{Reader: mgr.GetClient()}).
		WithDefaulterCustomPath(JobPath).Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr, &corev1.Pod{}).WithDefaulter(&PodFolder{Reader: mgr.GetClient()}).
		WithDefaulterCustomPath(PodPath).WithValidator(&AllocationGuard{Worker: WorkerUser}).
		WithValidatorCustomPath(PodGuardPath).Complete()
}

// TimeoutSeconds is how long the API server waits for a webhook's answer.
const TimeoutSeconds = 5

// entranceQueue is the CEL condition that an object's queue label names one of the product's entrance
// queues (pools.EntranceName: gpustack-fnv64-<hash>).
var entranceQueue = "object.metadata.labels['" + workerv1.LabelQueueName + "'].startsWith('" + pools.EntrancePrefix + "')"

// Configurations returns the webhook configurations, each webhook reached through clientConfig(path): a
// Service in a cluster, a loopback URL on the local cluster.
func Configurations(clientConfig func(path string) admissionv1.WebhookClientConfig) (*admissionv1.MutatingWebhookConfiguration, *admissionv1.ValidatingWebhookConfiguration) {
	none := admissionv1.SideEffectClassNone
	fail := admissionv1.Fail
	// The webhooks fail closed: a slow or absent worker refuses what they cover, so they answer within a few
	// seconds and never stand in the way of the system's own namespaces.
	timeout := ptr.To[int32](TimeoutSeconds)
	userNamespaces := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: workerv1.SystemNamespaces()}}}
	// Only work sent to one of the product's entrance queues: another team's Kueue queue is none of the
	// worker's business, and must not wait on it (nor be refused while no worker replica answers).
	toEntrance := []admissionv1.MatchCondition{{Name: "sent-to-an-entrance-queue", Expression: entranceQueue}}
	mutating := &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: MutatingName},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name: "pods.worker.gpustack.ai", ClientConfig: clientConfig(PodPath),
			Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			// Only Pods that queue: the fold is for Kueue's credits.
			ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: workerv1.LabelQueueName, Operator: metav1.LabelSelectorOpExists}}},
			MatchConditions:   toEntrance,
			NamespaceSelector: userNamespaces, TimeoutSeconds: timeout,
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy: ptr.To(admissionv1.IfNeededReinvocationPolicy),
		}, {
			// A queued Job: Kueue charges it by its Pod template, and its Pods do not queue themselves.
			Name: "jobs.worker.gpustack.ai", ClientConfig: clientConfig(JobPath),
			Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule: admissionv1.Rule{APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs"}}}},
			ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: workerv1.LabelQueueName, Operator: metav1.LabelSelectorOpExists}}},
			MatchConditions:   toEntrance,
			NamespaceSelector: userNamespaces, TimeoutSeconds: timeout,
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy: ptr.To(admissionv1.IfNeededReinvocationPolicy),
		}, {
			Name: "instancetypes.worker.gpustack.ai", ClientConfig: clientConfig(InstanceTypePath),
			Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule: admissionv1.Rule{APIGroups: []string{workerv1.GroupVersion.Group}, APIVersions: []string{"v1"}, Resources: []string{"instancetypes"}}}},
			TimeoutSeconds: timeout, FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}
	validating := &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ValidatingName},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name: "instances.worker.gpustack.ai", ClientConfig: clientConfig(InstancePath),
			Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
				Rule: admissionv1.Rule{APIGroups: []string{workerv1.GroupVersion.Group}, APIVersions: []string{"v1"}, Resources: []string{"instances"}}}},
			NamespaceSelector: userNamespaces, TimeoutSeconds: timeout,
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}, {
			// Every Pod, queued or not (the ledger charges what runs), but asked only when a write sets or
			// changes the cards annotation and the writer is not the worker: the conditions cost the API server
			// a CEL evaluation, not a call.
			Name: "pods.worker.gpustack.ai", ClientConfig: clientConfig(PodGuardPath),
			Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
				Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			MatchConditions: []admissionv1.MatchCondition{
				{Name: "sets-or-changes-the-cards", Expression: allocatedChanged},
				{Name: "not-the-worker", Expression: "request.userInfo.username != '" + WorkerUser + "'"},
			},
			NamespaceSelector: userNamespaces, TimeoutSeconds: timeout,
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}
	return mutating, validating
}
