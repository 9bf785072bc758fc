package pools

import (
	"encoding/json"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// Feature describes how one card divides: soft slices as its manufacturer allows (slicesPerCard, 0 for none),
// and no hardware partitions until a card reports a partitioning mode.
func Feature(slicesPerCard int32, coresOvercommit bool) *workerv1.InstanceTypeFeature {
	f := &workerv1.InstanceTypeFeature{PhysicalSliced: &workerv1.PhysicalSlicedFeature{MaxSize: 0}}
	if slicesPerCard > 0 {
		f.LogicalSliced = &workerv1.LogicalSlicedFeature{MaxSize: slicesPerCard,
			CoresPercentageOvercommit: coresOvercommit, MemoryPercentageStep: 1}
	}
	return f
}

// Notes returns a flavor's note.gpustack.ai annotations: its gKey and its nodes' CPU, and for an accelerated
// flavor its aKey and one card's descriptors. Values left unknown are left out. They do not depend on any
// setting, so a flavor never changes when one flips.
func Notes(f Flavor) map[string]string {
	h := f.Hardware
	out := map[string]string{workerv1.NoteGeneralGroup: f.GKey}
	setIf(out, workerv1.NoteCPUManufacturer, h.CPUManufacturer)
	setIf(out, workerv1.NoteCPUDetail, h.CPUModel)
	if !f.Accelerated() {
		return out
	}
	out[workerv1.NoteGroup] = f.AKey
	out[workerv1.NoteManufacturer] = f.Manufacturer
	setIf(out, workerv1.NoteProduct, h.Product)
	setIf(out, workerv1.NoteFamily, h.Family)
	setIf(out, workerv1.NoteVRAM, h.Memory)
	setIf(out, workerv1.NoteCores, h.Cores)
	feature, _ := json.Marshal(Feature(h.SlicesPerCard, h.CoresOvercommit)) // a struct of plain fields always marshals
	out[workerv1.NoteAcceleratorFeature] = string(feature)
	return out
}

// FlavorFromNotes reads back what a ResourceFlavor's labels and notes say of it: its keys, platform and
// hardware, which Catalog groups as it grouped the flavors themselves. A flavor without notes, or with a
// feature that does not parse, is an error naming the annotation.
func FlavorFromNotes(name string, labels, notes map[string]string) (Flavor, error) {
	f := Flavor{Name: name, GKey: notes[workerv1.NoteGeneralGroup], AKey: notes[workerv1.NoteGroup],
		OS: labels[workerv1.LabelOS], Arch: labels[workerv1.LabelArch], Manufacturer: notes[workerv1.NoteManufacturer],
		Hardware: Hardware{CPUManufacturer: notes[workerv1.NoteCPUManufacturer], CPUModel: notes[workerv1.NoteCPUDetail],
			Product: notes[workerv1.NoteProduct], Family: notes[workerv1.NoteFamily], Memory: notes[workerv1.NoteVRAM],
			Cores: notes[workerv1.NoteCores]}}
	if f.GKey == "" {
		return Flavor{}, errors.Errorf("ResourceFlavor %s: annotation %s: required", name, workerv1.NoteGeneralGroup)
	}
	if !f.Accelerated() {
		return f, nil
	}
	var feature workerv1.InstanceTypeFeature
	if err := json.Unmarshal([]byte(notes[workerv1.NoteAcceleratorFeature]), &feature); err != nil {
		return Flavor{}, errors.Wrapf(err, "ResourceFlavor %s: annotation %s: cannot parse", name, workerv1.NoteAcceleratorFeature)
	}
	if l := feature.LogicalSliced; l != nil {
		f.Hardware.SlicesPerCard, f.Hardware.CoresOvercommit = l.MaxSize, l.CoresPercentageOvercommit
	}
	return f, nil
}

func setIf(m map[string]string, k, v string) {
	if v != "" {
		m[k] = v
	}
}
