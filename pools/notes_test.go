package pools

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

func TestNotesRoundTrip(t *testing.T) {
	a10g := Flavor{Name: "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64-1d", GKey: "amd-epyc-7r32", AKey: "nvidia-a10g",
		OS: "linux", Arch: "amd64", Manufacturer: "nvidia", Hardware: Hardware{CPUManufacturer: "amd", CPUModel: "AMD EPYC 7R32",
			Product: "NVIDIA-A10G", Family: "Ampere", Memory: "24Gi", Cores: "10240", SlicesPerCard: 128, CoresOvercommit: true}}
	labels := map[string]string{workerv1.LabelOS: "linux", workerv1.LabelArch: "amd64"}
	notes := Notes(a10g)
	if got := notes[workerv1.NoteAcceleratorFeature]; got != `{"logicalSliced":{"maxSize":128,"coresPercentageOvercommit":true,"memoryPercentageStep":1},"physicalSliced":{"maxSize":0}}` {
		t.Errorf("Notes(...)[%s] = %s, want the card's InstanceTypeFeature", workerv1.NoteAcceleratorFeature, got)
	}
	got, err := FlavorFromNotes(a10g.Name, labels, notes)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a10g, got); diff != "" {
		t.Errorf("FlavorFromNotes(Notes(...)) reads back every descriptor: -want, +got:\n%s", diff)
	}

	cases := map[string]struct {
		reason string
		notes  map[string]string
		want   string
	}{
		"NoNotes": {reason: "A flavor without notes is not read as an empty one.", notes: map[string]string{},
			want: "ResourceFlavor x: annotation note.gpustack.ai/generalGroup: required"},
		"BadFeature": {reason: "A feature that does not parse names the annotation.",
			notes: map[string]string{workerv1.NoteGeneralGroup: "g", workerv1.NoteGroup: "nvidia-a10g", workerv1.NoteAcceleratorFeature: "{"},
			want:  "ResourceFlavor x: annotation note.gpustack.ai/acceleratorFeature: cannot parse: unexpected end of JSON input"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := FlavorFromNotes("x", labels, tc.notes)
			if diff := cmp.Diff(tc.want, errString(err)); diff != "" {
				t.Errorf("%s\nFlavorFromNotes(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
