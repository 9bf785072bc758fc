package deviceplugin

import (
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// EnvSlicedAllocateGate names the variable that turns the ledger check before a slice is handed out off.
const EnvSlicedAllocateGate = "GPUSTACK_DEVICE_PLUGIN_SLICED_ALLOCATE_GATE"

// SlicedAllocateGate reads EnvSlicedAllocateGate through getenv: true (the default) checks a slice's card on
// the ledger at Allocate, false does not. A value that is not a boolean is an error naming the variable.
func SlicedAllocateGate(getenv func(string) string) (bool, error) {
	v := strings.TrimSpace(getenv(EnvSlicedAllocateGate))
	if v == "" {
		return true, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, errors.Errorf("%s=%q: want true or false", EnvSlicedAllocateGate, v)
	}
	return on, nil
}
