package pools

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// Unit is the size of one unit of a derived pool: per whole accelerator, or per core of a CPU pool.
type Unit struct {
	CPU          string
	RAM          string
	LocalStorage string
}

// DefaultLocalStorage is the local storage of every derived pool.
const DefaultLocalStorage = "100Gi"

// presetTiers size a derived accelerated pool by the memory of one card.
var presetTiers = []struct {
	maxGiB int64 // inclusive upper bound; 0 means unbounded
	unit   Unit
}{
	{16, Unit{"8", "32Gi", DefaultLocalStorage}},   // small: T4, L4, V100, A30
	{48, Unit{"8", "64Gi", DefaultLocalStorage}},   // medium: A10G, A10, A100-40GB, RTX 4090
	{96, Unit{"12", "128Gi", DefaultLocalStorage}}, // large: A100-80GB, L40S, MI210
	{0, Unit{"12", "192Gi", DefaultLocalStorage}},  // xlarge: H100, H200, B200, MI300X
}

// FallbackUnit sizes a pool of an accelerator whose memory is unknown.
var FallbackUnit = Unit{"4", "16Gi", DefaultLocalStorage}

// GenericUnit sizes a CPU-only pool.
var GenericUnit = Unit{"1", "2Gi", DefaultLocalStorage}

// PresetUnit returns the unit of a derived pool: the generic unit for a CPU pool, else the tier of the card's
// memory (a label value such as 24Gi), or the fallback when the memory is unknown.
func PresetUnit(acceleratable bool, memory string) Unit {
	if !acceleratable {
		return GenericUnit
	}
	q, err := resource.ParseQuantity(memory)
	if err != nil || q.Sign() <= 0 {
		return FallbackUnit
	}
	gib := (q.Value() + (1<<30 - 1)) >> 30
	for _, t := range presetTiers {
		if t.maxGiB == 0 || gib <= t.maxGiB {
			return t.unit
		}
	}
	return FallbackUnit
}
