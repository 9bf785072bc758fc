package v1

// NodeFeatureWriter is one of the product's writers of NodeFeature objects. Each writes one NodeFeature per
// node, in SystemNamespace, named for the node and itself, so no writer's labels overwrite another's and NFD
// merges them all into the node's labels.
type NodeFeatureWriter string

// The product's NodeFeature writers.
const (
	// NodeFeatureDeviceManager is a node's device manager: its accelerators' labels.
	NodeFeatureDeviceManager NodeFeatureWriter = "gpustack-device-manager"
	// NodeFeatureCPUInfo is a node's CPU reporter: its CPU's identity. Its name sorts before the device manager's,
	// so NFD merges the agent's acceleratable=true over the reporter's false.
	NodeFeatureCPUInfo NodeFeatureWriter = "gpustack-cpu-info"
	// NodeFeatureProfile is the worker's node profiler: the groups and flavors a node counts in.
	NodeFeatureProfile NodeFeatureWriter = "gpustack-worker"
	// NodeFeatureFit is the worker's fit labeller: which Instance sizes still fit the node.
	NodeFeatureFit NodeFeatureWriter = "gpustack-fit"
)

// NodeFeatureName is the name of writer's NodeFeature for node: <node>-<writer>.
func NodeFeatureName(node string, writer NodeFeatureWriter) string {
	return node + "-" + string(writer)
}
