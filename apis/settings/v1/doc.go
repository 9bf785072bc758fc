// Package v1 holds the settings.gpustack.ai/v1 API: the operator's settings as the worker serves them through
// kube-apiserver's aggregation layer, one Setting per setting, which can be read, watched and patched but not
// created or deleted, whose spec.value is written and never read back, and whose sensitive values are masked.
// The worker keeps them in the Setting objects of worker.gpustack.ai/v1 (internal/settingsapi).
//
// +kubebuilder:object:generate=true
// +kubebuilder:skip
// +groupName=settings.gpustack.ai
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=ai.gpustack.settings.v1
package v1
