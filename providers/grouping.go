package providers

import (
	"github.com/gpustack/gpustack-operator/envvar"
	"github.com/gpustack/gpustack-operator/pools"
)

// EnvGroupIDWithMemory names the variable that keys accelerator groups by product and memory.
const EnvGroupIDWithMemory = "GPUSTACK_DEVICES_GROUP_ID_WITH_MEMORY"

// groupIDWithMemory is EnvGroupIDWithMemory as Configure read it; off by default, as in the reference.
var groupIDWithMemory bool

// Configure reads the grouping settings through getenv (os.Getenv). A process calls it once at start, before
// it groups cards: the operator's main does, so a device manager (which inherits the worker's GPUSTACK_*
// variables) keys its groups as the chart says. A value that is not a boolean is an error naming the variable.
func Configure(getenv func(string) string) error {
	on, err := envvar.Bool(getenv, EnvGroupIDWithMemory, false)
	groupIDWithMemory = on
	return err
}

// GroupKey returns the aKey of a card's group: its product's key, with the card's memory as a last segment
// (nvidia-tesla-t4-16g) when GPUSTACK_DEVICES_GROUP_ID_WITH_MEMORY is true.
func GroupKey(d Device) string {
	if groupIDWithMemory {
		return pools.AcceleratorKeyWithMemory(d.Manufacturer, d.Product, d.MemoryMiB)
	}
	return pools.AcceleratorKey(d.Manufacturer, d.Product)
}
