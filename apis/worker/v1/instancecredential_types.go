package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpustack/gpustack-operator/apis/internal/kinds"
)

// Reasons of the Ready condition of the kinds backed by a Secret (InstanceSSHPublicKey, InstanceImagePullSecret):
// Ready is true once the Secret of the object's name is there for Instances to use.
const (
	// ReasonSecretCreated: the Secret was made from this object's spec.
	ReasonSecretCreated = "SecretCreated"
	// ReasonSecretFound: a Secret of the object's name was already there; it is used as it is.
	ReasonSecretFound = "SecretFound"
	// ReasonInvalidSpec: the spec cannot be turned into a Secret (a line that is no public key, say).
	ReasonInvalidSpec = "InvalidSpec"
)

// InstanceSSHPublicKeySpec is the public keys an Instance's SSH sidecar accepts.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an InstanceSSHPublicKey is immutable: create another one, or delete and re-create it"
type InstanceSSHPublicKeySpec struct {
	// Data is the keys in OpenSSH's authorized_keys format: one public key a line (ssh-ed25519 AAAA... user),
	// with options where sshd allows them; blank lines and lines starting with # are ignored.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	Data string `json:"data"`
}

// CredentialStatus is the state of the Secret that backs an InstanceSSHPublicKey or an InstanceImagePullSecret.
type CredentialStatus struct {
	// Secret is the name of the Secret, in the object's namespace, that Instances' Pods use: the object's own.
	// +optional
	Secret string `json:"secret,omitempty"`

	// Conditions: Ready, with the reason SecretCreated, SecretFound or InvalidSpec.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// InstanceSSHPublicKey is a set of SSH public keys an Instance names in spec.sshPublicKey: its sidecar lets in
// whoever holds a matching private key. The worker backs it with a Secret of the same name (key
// authorized_keys), owned by it, which the Instance's Pod mounts.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=instsshkey,categories=gpustack
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="REASON",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type InstanceSSHPublicKey struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the keys.
	Spec InstanceSSHPublicKeySpec `json:"spec"`

	// Status is the state of the Secret that backs the keys.
	// +optional
	Status CredentialStatus `json:"status,omitempty"`
}

// InstanceSSHPublicKeyList is a list of InstanceSSHPublicKeys.
//
// +kubebuilder:object:root=true
type InstanceSSHPublicKeyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the keys.
	Items []InstanceSSHPublicKey `json:"items"`
}

// InstanceImagePullSecretSpec is a registry's credentials.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an InstanceImagePullSecret is immutable: create another one, or delete and re-create it"
type InstanceImagePullSecretSpec struct {
	// Registry is the registry's host, with its port where it has one (registry.example.com:5000); docker.io for
	// Docker Hub.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._/-]*)?$`
	Registry string `json:"registry"`

	// Username is the account to pull as.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Username string `json:"username"`

	// Password is the account's password or access token. It is stored in this object as a Secret's data is
	// stored; grant read access to instanceimagepullsecrets as to secrets.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Password string `json:"password"`
}

// InstanceImagePullSecret is a registry's credentials an Instance names in spec.imagePullSecret to pull its
// image. The worker backs it with a Secret of the same name, of type kubernetes.io/dockerconfigjson, owned by
// it, which the Instance's Pod lists in imagePullSecrets.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=instpullsecret,categories=gpustack
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="REGISTRY",type=string,JSONPath=`.spec.registry`
// +kubebuilder:printcolumn:name="USERNAME",type=string,JSONPath=`.spec.username`
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type InstanceImagePullSecret struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the credentials.
	Spec InstanceImagePullSecretSpec `json:"spec"`

	// Status is the state of the Secret that backs the credentials.
	// +optional
	Status CredentialStatus `json:"status,omitempty"`
}

// InstanceImagePullSecretList is a list of InstanceImagePullSecrets.
//
// +kubebuilder:object:root=true
type InstanceImagePullSecretList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the credentials.
	Items []InstanceImagePullSecret `json:"items"`
}

func init() {
	kinds.Register(&SchemeBuilder, GroupVersion, &InstanceSSHPublicKey{}, &InstanceSSHPublicKeyList{},
		&InstanceImagePullSecret{}, &InstanceImagePullSecretList{})
}
