package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "gateway.gpustack.ai", Version: "v1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme: each kind's file adds its own
	// (kinds.Register), as apimachinery's builder does, which api packages can import without controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder()

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// APIServiceName is the APIService that puts this group version behind kube-apiserver.
const APIServiceName = "v1.gateway.gpustack.ai"

// ServingSecretName is the Secret, in the gateway's namespace, of the serving certificate every replica of the
// gateway serves the aggregation layer with.
const ServingSecretName = "gpustack-operator-worker-gateway-tls"

// AnswersSecretName is the Secret, in the gateway's namespace, where the gateway keeps each member's last
// answer across its restarts.
const AnswersSecretName = "gpustack-operator-worker-gateway-answers"

// LabelMember marks a Secret in the members' namespace as a member cluster: the Secret's name is the
// member's name and its data key KubeconfigKey holds a kubeconfig to read it with.
const LabelMember = "gateway.gpustack.ai/member"

// MembersNamespace is the default namespace of the member Secrets (the gateway's --members-namespace, the
// chart's workerGateway.membersNamespace). It holds nothing else, so the gateway, which must list it to find
// its members, reads no Secret of the operator's own namespace.
const MembersNamespace = "gpustack-members"

// KubeconfigKey is the data key of a member Secret that holds the member's kubeconfig.
const KubeconfigKey = "kubeconfig"

// LabelDispatch marks what the worker-gateway writes on a manager cluster to dispatch Instances to its members
// through MultiKueue: the gateway removes what carries it and is no longer wanted, and the worker's composer
// leaves InstanceTypes carrying it (the members' types, mirrored) to the gateway.
const LabelDispatch = "gateway.gpustack.ai/dispatch"

// AnnotationUnwantedSince is set by the worker-gateway on what it dispatched and no member offers any more:
// when it noticed (RFC 3339). The object is kept as it is, held in the cluster rather than in the gateway's
// memory so a restart does not shorten the wait, and removed once the gateway's retention (its --retention
// flag) has passed since; a member that offers it again takes it back.
const AnnotationUnwantedSince = "gateway.gpustack.ai/unwanted-since"

// MultiKueueCheckPrefix begins the name of the MultiKueue AdmissionCheck the worker-gateway gives each
// dispatched type's queue on a manager cluster (the type's name follows it).
const MultiKueueCheckPrefix = "gpustack-multikueue-"

// AnnotationMemberReasons is set by the worker-gateway on a manager cluster's Pod that MultiKueue has not
// placed yet: why each member holding a copy has not admitted it, in one line ("member-a: waiting for quota:
// ...; member-b: ..."), for the Instance's status to tell.
const AnnotationMemberReasons = "gateway.gpustack.ai/member-reasons"

// AnnotationMemberAccess is set by the worker-gateway on a manager cluster's Pod that MultiKueue placed on a
// member: where its Instance is reached on that member (its addresses and node ports, as JSON), as the member's
// worker noted it on the Service it made there, for the manager's Instance to show.
const AnnotationMemberAccess = "gateway.gpustack.ai/member-access"
