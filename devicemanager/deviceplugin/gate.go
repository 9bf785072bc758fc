package deviceplugin

import (
	"github.com/gpustack/gpustack-operator/envvar"
)

// EnvSlicedAllocateGate names the variable that turns the ledger check before a slice is handed out off.
const EnvSlicedAllocateGate = "GPUSTACK_DEVICE_PLUGIN_SLICED_ALLOCATE_GATE"

// EnvIdentifyByKubelet names the variable that turns off asking the kubelet which container an allocation is
// for.
const EnvIdentifyByKubelet = "GPUSTACK_DEVICE_PLUGIN_IDENTIFY_BY_KUBELET"

// SlicedAllocateGate reads EnvSlicedAllocateGate through getenv: true (the default) checks a slice's card on
// the ledger at Allocate, false does not. A value that is not a boolean is an error naming the variable.
func SlicedAllocateGate(getenv func(string) string) (bool, error) {
	return envvar.Bool(getenv, EnvSlicedAllocateGate, true)
}

// IdentifyByKubelet reads EnvIdentifyByKubelet through getenv: true (the default) tells the container an
// allocation is for by the kubelet's pod-resources API (PodBudgets.PodResources), false by the API server's
// Pods alone. A value that is not a boolean is an error naming the variable.
func IdentifyByKubelet(getenv func(string) string) (bool, error) {
	return envvar.Bool(getenv, EnvIdentifyByKubelet, true)
}
