package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpustack/gpustack-operator/apis/internal/kinds"
)

// SettingSpec is the administrator's value of one setting.
type SettingSpec struct {
	// Value is the setting's value as a string; booleans are "true" or "false". Empty restores the default.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Value string `json:"value,omitempty"`
}

// SettingStatus is the setting's effective value and what it means.
type SettingStatus struct {
	// Value is the value in effect, or (sensitive) for a sensitive setting.
	// +optional
	Value string `json:"value,omitempty"`

	// Default is the built-in default.
	// +optional
	Default string `json:"default,omitempty"`

	// Description says what the setting does.
	// +optional
	Description string `json:"description,omitempty"`

	// Editable is false for a setting that is read-only at runtime.
	// +optional
	Editable bool `json:"editable,omitempty"`

	// Sensitive is true when the value must not be shown.
	// +optional
	Sensitive bool `json:"sensitive,omitempty"`
}

// Setting is where the worker keeps one operator setting, in the gpustack-system namespace and named after the
// setting (instance-privileged-allowed, instance-type-aware-cpu-manufacturer, ...). Administrators read and
// change it through settings.gpustack.ai/v1, which the worker serves as a view of this object (no spec shown,
// sensitive values masked) and which kubectl's settings and set name:
// `kubectl -n gpustack-system patch setting NAME --type merge -p '{"spec":{"value":"true"}}'`. Where the chart
// serves no settings API, this object is the one to patch (settings.worker.gpustack.ai).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="VALUE",type=string,JSONPath=`.status.value`
// +kubebuilder:printcolumn:name="DEFAULT",type=string,JSONPath=`.status.default`
// +kubebuilder:printcolumn:name="DESCRIPTION",type=string,JSONPath=`.status.description`,priority=1
// +kubebuilder:validation:XValidation:rule="self.metadata.name in ['node-management-manual', 'instance-type-mixed-on-node', 'instance-type-derived-from-node', 'instance-type-drain-when-no-flavors', 'instance-type-drain-grace-period', 'instance-type-aware-cpu-manufacturer', 'instance-general-resources-overcommit', 'instance-privileged-allowed', 'instance-host-path-volume-allowed', 'instance-persistent-volume-placement', 'instance-ssh-server-image', 'instance-access-static-address', 'instance-access-wildcard-dns', 'workload-fit-affinity', 'container-registry', 'container-namespace', 'image-pull-secrets', 'image-pull-policy', 'container-registry-auth']",message="metadata.name must be a known setting; see docs/settings.md"
// +kubebuilder:validation:XValidation:rule="!(self.metadata.name in ['node-management-manual', 'instance-type-mixed-on-node', 'instance-type-derived-from-node', 'instance-type-drain-when-no-flavors', 'instance-type-aware-cpu-manufacturer', 'instance-general-resources-overcommit', 'instance-privileged-allowed', 'instance-host-path-volume-allowed', 'instance-persistent-volume-placement', 'workload-fit-affinity']) || !has(self.spec) || !has(self.spec.value) || (size(self.spec.value) == 0 || self.spec.value in ['true', 'false'])",message="spec.value of a boolean setting must be \"true\" or \"false\"",fieldPath=".spec.value"
// +kubebuilder:validation:XValidation:rule="!(self.metadata.name in ['instance-type-drain-grace-period']) || !has(self.spec) || !has(self.spec.value) || size(self.spec.value) == 0 || self.spec.value.matches('^(0|([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+)$')",message="spec.value of a duration setting must be a duration such as 90s, 5m or 1h30m",fieldPath=".spec.value"
// +kubebuilder:validation:XValidation:rule="self.metadata.name != 'container-registry-auth' || !has(self.spec) || !has(self.spec.value) || size(self.spec.value.trim()) == 0 || self.spec.value.trim().matches('^[^:]+:')",message="spec.value of container-registry-auth must be <username>:<password> with a non-empty username",fieldPath=".spec.value"
// +kubebuilder:validation:XValidation:rule="self.metadata.name != 'image-pull-policy' || !has(self.spec) || !has(self.spec.value) || (size(self.spec.value) == 0 || self.spec.value in ['Always', 'IfNotPresent', 'Never'])",message="spec.value of image-pull-policy must be Always, IfNotPresent or Never",fieldPath=".spec.value"
type Setting struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the administrator's value.
	// +optional
	Spec SettingSpec `json:"spec,omitempty"`

	// Status is the effective value.
	// +optional
	Status SettingStatus `json:"status,omitempty"`
}

// SettingList is a list of Settings.
//
// +kubebuilder:object:root=true
type SettingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Settings.
	Items []Setting `json:"items"`
}

func init() {
	kinds.Register(&SchemeBuilder, GroupVersion, &Setting{}, &SettingList{})
}
