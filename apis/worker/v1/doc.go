// Package v1 holds the worker.gpustack.ai/v1 API: the accelerator pools (InstanceType), their hardware
// catalog (InstanceTypeFlavor), per-node inventories and ledgers (Devices), the workloads users launch
// (Instance, InstancePersistentVolume and its types, InstanceSSHPublicKey, InstanceImagePullSecret) and the
// administrator's settings (Setting).
//
// +kubebuilder:object:generate=true
// +groupName=worker.gpustack.ai
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=ai.gpustack.worker.v1
package v1
