// Package pools is the domain core of the scheduling chain: how nodes are keyed (gKey, aKey), how they group
// into ResourceFlavors, catalog entries and InstanceTypes, what a pool's queues are called, how big a derived
// pool's unit is, and the four capacity views. It is plain Go over plain values: no client, no clock, no I/O,
// so the composition functions, the controllers, `plan` and the tests all share it.
package pools

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
)

// KeyBudget is the longest a gKey or aKey may be: the key appears in label names such as
// general.feature.gpustack.ai/<gKey>.capacity, whose name part is limited to 63 characters.
const KeyBudget = 54

// Generic is the gKey of a node whose CPU is unknown, and the general group of a pool open to any CPU.
const Generic = "generic"

var (
	trademarks   = regexp.MustCompile(`(?i)\((r|tm|c)\)|®|™`)
	frequency    = regexp.MustCompile(`(?i)\s+(cpu\s+)?@.*$`)
	coreCount    = regexp.MustCompile(`(?i)\s+\d+-core(\s+processor)?\b`)
	processor    = regexp.MustCompile(`(?i)\s+processor\s*$`)
	nonAlnum     = regexp.MustCompile(`[^a-z0-9]+`)
	labelInvalid = regexp.MustCompile(`[^A-Za-z0-9._-]+`)
)

// Sanitize lowercases s and turns every run of other characters than letters and digits into one dash.
func Sanitize(s string) string {
	return strings.Trim(nonAlnum.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// truncate cuts a key to n characters without leaving a trailing dash.
func truncate(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.TrimRight(s, "-")
}

// CPUManufacturer is the lowercase cpuid vendor name NFD reports (AMD -> amd), or generic when unknown.
func CPUManufacturer(vendorID string) string {
	m := Sanitize(vendorID)
	switch m {
	case "":
		return Generic
	case "authenticamd":
		return "amd"
	case "genuineintel":
		return "intel"
	}
	return m
}

// GeneralKey returns a node's CPU key (gKey): ${cpuManufacturer}-${id}, where id is the sanitized CPU model
// name without trademark markers, frequency or core-count text and without repeating the manufacturer. When
// the name is unknown (empty, or an unresolved NFD template starting with @) the key falls back to the family
// and model IDs, and to generic when NFD reports no CPU identity at all.
func GeneralKey(vendorID, modelName, family, modelID string) string {
	mfr := CPUManufacturer(vendorID)
	name := strings.TrimSpace(modelName)
	if strings.HasPrefix(name, "@") {
		name = ""
	}
	if name != "" {
		name = trademarks.ReplaceAllString(name, "")
		name = frequency.ReplaceAllString(name, "")
		name = coreCount.ReplaceAllString(name, "")
		name = processor.ReplaceAllString(name, "")
		id := Sanitize(name)
		switch {
		case id == "":
			// A name of punctuation only says nothing.
		case mfr == Generic:
			// Without a vendor the name's first word stands for the manufacturer.
			return truncate(id, KeyBudget)
		default:
			if id = strings.TrimPrefix(id, mfr+"-"); id != mfr {
				return truncate(mfr+"-"+id, KeyBudget)
			}
		}
	}
	if family != "" && modelID != "" && mfr != Generic {
		return truncate(mfr+"-"+Sanitize(family)+"-"+Sanitize(modelID), KeyBudget)
	}
	return Generic
}

// AcceleratorKey returns an accelerator group's key (aKey): ${manufacturer}-${id}, id being the sanitized
// product name without a repeated manufacturer word (NVIDIA A10G -> nvidia-a10g, Tesla T4 -> nvidia-tesla-t4).
func AcceleratorKey(manufacturer, product string) string {
	id := Sanitize(product)
	id = strings.TrimPrefix(id, manufacturer+"-")
	if id == "" || id == manufacturer {
		return manufacturer
	}
	return truncate(manufacturer+"-"+id, KeyBudget)
}

// AcceleratorKeyWithMemory is AcceleratorKey with the card's memory in whole GiB (rounded) as a last segment
// (Tesla T4, 16384 MiB -> nvidia-tesla-t4-16g), so one product sold with several memory sizes makes one group
// per size (GPUSTACK_DEVICES_GROUP_ID_WITH_MEMORY). A card of unknown memory keeps the plain key. The suffix
// survives the key's truncation.
func AcceleratorKeyWithMemory(manufacturer, product string, memoryMiB int64) string {
	key := AcceleratorKey(manufacturer, product)
	if memoryMiB <= 0 {
		return key
	}
	suffix := fmt.Sprintf("-%dg", (memoryMiB+512)/1024)
	return truncate(key, KeyBudget-len(suffix)) + suffix
}

// ProductLabel is the product as a label value: case kept, spaces and other characters turned into dashes
// (NVIDIA A10G -> NVIDIA-A10G).
func ProductLabel(product string) string {
	v := strings.Trim(labelInvalid.ReplaceAllString(strings.TrimSpace(product), "-"), "-._")
	return strings.TrimRight(truncate(v, 63), "._")
}

// MemoryLabel renders MiB in the largest binary unit that keeps it whole (24576 -> 24Gi, 15360 -> 15Gi).
func MemoryLabel(mib int64) string {
	switch {
	case mib <= 0:
		return ""
	case mib%(1024*1024) == 0:
		return fmt.Sprintf("%dTi", mib/(1024*1024))
	case mib%1024 == 0:
		return fmt.Sprintf("%dGi", mib/1024)
	}
	return fmt.Sprintf("%dMi", mib)
}

// EntranceName returns the entrance LocalQueue of a pool: gpustack-fnv64- and the 16 hex digits of the
// FNV-1a 64 hash of the pool's name (which is also its ClusterQueue's name).
func EntranceName(pool string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(pool))
	return fmt.Sprintf("%s%016x", EntrancePrefix, h.Sum64())
}

// EntrancePrefix begins the name of every entrance LocalQueue: the product's admission webhooks look at work
// sent to such a queue alone.
const EntrancePrefix = "gpustack-fnv64-"

// FlavorName returns a ResourceFlavor's name: gpustack--${gKey}[--${aKey}]-${os}-${arch}-${count}{c|d}, with c
// for the cores of a CPU flavor and d for the devices of an accelerated one.
func FlavorName(gKey, aKey, os, arch string, count int64) string {
	if aKey == "" {
		return fmt.Sprintf("gpustack--%s-%s-%s-%dc", gKey, os, arch, count)
	}
	return fmt.Sprintf("gpustack--%s--%s-%s-%s-%dd", gKey, aKey, os, arch, count)
}

// PoolName returns the name of a pool (InstanceType and ClusterQueue) of a general group (generic or a gKey)
// and an accelerator group (empty for a CPU pool) on one os and arch.
func PoolName(generalGroup, acceleratorGroup, os, arch string) string {
	return CatalogName(generalGroup, acceleratorGroup) + "-" + os + "-" + arch
}

// CatalogName returns the name of a catalog entry (InstanceTypeFlavor): gpustack--generic or
// gpustack--${gKey} for CPU entries; gpustack--${aKey} (collapsed) or gpustack--${gKey}--${aKey} (CPU-aware)
// for accelerator entries.
func CatalogName(generalGroup, acceleratorGroup string) string {
	switch {
	case acceleratorGroup == "":
		return "gpustack--" + generalGroup
	case generalGroup == "" || generalGroup == Generic:
		return "gpustack--" + acceleratorGroup
	}
	return "gpustack--" + generalGroup + "--" + acceleratorGroup
}
