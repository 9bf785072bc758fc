package pools

import (
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// WorkerLabels returns the labels of a node's worker NodeFeature: gpustack.ai/managed (left out when
// management is manual, so an administrator's own label is honoured) and the general.feature.gpustack.ai keys
// of its CPU: the manufacturer, the gKey and the gKey's core count. cpuVendor, cpuName, cpuFamily and cpuID are
// what NFD and the gpustack-cpu-info rule report; cores is the node's CPU capacity.
func WorkerLabels(cpuVendor, cpuName, cpuFamily, cpuID string, cores int64, managed string) map[string]string {
	gKey := GeneralKey(cpuVendor, cpuName, cpuFamily, cpuID)
	l := map[string]string{
		workerv1.GeneralPrefix + gKey:            "true",
		workerv1.GeneralPrefix + gKey + ".count": FormatCount(cores),
	}
	if mfr := CPUManufacturer(cpuVendor); mfr != Generic {
		l[workerv1.GeneralPrefix+mfr] = "true"
	}
	if managed != "" {
		l[workerv1.LabelManaged] = managed
	}
	return l
}

// CPUOnly reports whether a node carries feature.gpustack.ai/cpu-only: with instance-type-mixed-on-node off,
// only nodes without accelerators feed CPU flavors, and those flavors ask for this label.
func CPUOnly(n Node, mixedOnNode bool) bool { return !mixedOnNode && len(n.Groups) == 0 }
