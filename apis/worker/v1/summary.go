package v1

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// FormatView renders a view as the printer columns show it: onceMaxRequest/remaining, whole counts written
// out (2000, not 2k). A missing view is 0/0.
func FormatView(v *CapacityView) string {
	if v == nil {
		return "0/0"
	}
	return count(v.OnceMaxRequest) + "/" + count(v.Remaining)
}

// count writes a whole quantity as a plain number, and anything else as the quantity does.
func count(q resource.Quantity) string {
	if q.CmpInt64(q.Value()) == 0 {
		return strconv.FormatInt(q.Value(), 10)
	}
	return q.String()
}

// FormatUnit renders the UNIT(CPU/RAM)/STORAGE cell of a type: 8/64Gi/100Gi.
func FormatUnit(s *InstanceTypeSpec) string {
	return fmt.Sprintf("%s/%s/%s", s.UnitResources.CPU.String(), s.UnitResources.RAM.String(), s.LocalStorage.String())
}

// FormatAccelerator renders the ACCELERATOR(EX/SH/SL/PT) cell of a status: 1/1 1/10 100/100 0/0.
func FormatAccelerator(s *InstanceTypeStatus) string {
	var pt *CapacityView
	if s.AcceleratorPartitioned != nil {
		pt = &s.AcceleratorPartitioned.CapacityView
	}
	return strings.Join([]string{
		FormatView(s.Accelerator), FormatView(s.AcceleratorShared), FormatView(s.AcceleratorSliced), FormatView(pt),
	}, " ")
}

// FormatPartitions renders the PARTITIONS cell: each offered profile's remaining count, by profile name.
func FormatPartitions(s *InstanceTypeStatus) string {
	if s.AcceleratorPartitioned == nil || len(s.AcceleratorPartitioned.RemainingProfiles) == 0 {
		return ""
	}
	profiles := append([]ProfileCount(nil), s.AcceleratorPartitioned.RemainingProfiles...)
	sort.Slice(profiles, func(i, j int) bool { return profiles[i].Name < profiles[j].Name })
	cells := make([]string, len(profiles))
	for i, p := range profiles {
		cells[i] = fmt.Sprintf("%s=%d", p.Name, p.Count)
	}
	return strings.Join(cells, ",")
}

// Summarize fills the preformatted printer cells of a type's status from its spec and views.
func (t *InstanceType) Summarize() {
	t.Status.Summary = InstanceTypeSummary{
		Unit:        FormatUnit(&t.Spec),
		Accelerator: FormatAccelerator(&t.Status),
		CPU:         FormatView(t.Status.CPU),
		Partitions:  FormatPartitions(&t.Status),
	}
}
