package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpustack/gpustack-operator/apis/internal/kinds"
)

// SensitiveValue is what a sensitive setting's value reads back as.
const SensitiveValue = "(sensitive)"

// SettingSpec is what an administrator writes.
type SettingSpec struct {
	// Value is the setting's new value as a string; booleans are "true" or "false", and "" returns the setting
	// to its default. It is write-only: a Setting read back has no spec, and status.value says what is in
	// effect.
	// +optional
	Value *string `json:"value,omitempty"`
}

// SettingStatus is the setting's value in effect and what it means.
type SettingStatus struct {
	// Description says what the setting does.
	// +optional
	Description string `json:"description,omitempty"`

	// Editable is false for a setting that cannot be changed at runtime.
	Editable bool `json:"editable"`

	// Sensitive is true for a setting whose value is never shown: it reads back as (sensitive).
	Sensitive bool `json:"sensitive"`

	// Value is the value in effect, or (sensitive).
	Value string `json:"value"`

	// Default is the built-in default, or (sensitive).
	// +optional
	Default string `json:"default,omitempty"`
}

// Setting is one operator setting in the gpustack-system namespace, named after the setting
// (instance-privileged-allowed, workload-fit-affinity, ...). The worker keeps one of each: Settings are read,
// watched and changed, never created or deleted. Change one with
// `kubectl -n gpustack-system patch setting NAME --type merge -p '{"spec":{"value":"true"}}'`.
//
// +kubebuilder:object:root=true
type Setting struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the value to write; it is never read back.
	// +optional
	Spec *SettingSpec `json:"spec,omitempty"`

	// Status is the value in effect.
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
