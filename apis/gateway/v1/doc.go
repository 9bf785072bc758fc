// Package v1 holds the gateway.gpustack.ai/v1 API the worker-gateway serves, read-only, over the member
// clusters it reads: each member's InstanceTypes, Instances and InstancePersistentVolumes with the cluster they
// come from (ClusterInstanceType, ClusterInstance, ClusterInstancePersistentVolume), one InstanceType across the members (AggregatedInstanceType), and
// the members themselves (ClusterMember). None of them is stored: the gateway computes them from what the
// members answer, so they are not CRDs.
//
// +kubebuilder:object:generate=true
// +kubebuilder:skip
// +groupName=gateway.gpustack.ai
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=ai.gpustack.gateway.v1
package v1
