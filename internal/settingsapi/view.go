// Package settingsapi serves settings.gpustack.ai/v1 from the worker: an aggregated API server on
// k8s.io/apiserver whose one resource, settings, is a view of the Setting objects of worker.gpustack.ai/v1 that
// the worker keeps. Reading one shows the value in effect (masked when sensitive) and never the written
// spec.value; patching one writes the stored Setting's value; Settings are neither created nor deleted.
package settingsapi

import (
	settingsv1 "github.com/gpustack/gpustack-operator/apis/settings/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/settings"
)

// View returns the served Setting of a stored one: its metadata (so its resourceVersion is the stored one's,
// and a watch or an update with it means the same thing), no spec, and a status computed from its value and
// its definition. A stored Setting of no known setting (a bookmark carries only a resourceVersion) keeps only
// its metadata.
func View(s *workerv1.Setting) *settingsv1.Setting {
	d, known := workerv1.LookupSetting(s.Name)
	return view(s, d, known)
}

// view is View with the setting's definition given.
func view(s *workerv1.Setting, d workerv1.SettingDefinition, known bool) *settingsv1.Setting {
	v := &settingsv1.Setting{TypeMeta: settingsv1.SettingTypeMeta(), ObjectMeta: *s.ObjectMeta.DeepCopy()}
	v.ManagedFields = nil
	if !known {
		return v
	}
	v.Status = settingsv1.SettingStatus{Description: d.Description, Editable: true, Sensitive: d.IsSensitive(),
		Value: settings.Effective(s.Spec.Value, d), Default: d.Default}
	if d.IsSensitive() {
		v.Status.Value = settingsv1.SensitiveValue
		if d.Default != "" {
			v.Status.Default = settingsv1.SensitiveValue
		}
	}
	return v
}
