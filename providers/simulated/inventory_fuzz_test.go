package simulated

import "testing"

// FuzzParse feeds arbitrary files: parsing must never panic, and an accepted inventory is valid.
func FuzzParse(f *testing.F) {
	f.Add([]byte("nodes:\n" + goodNode))
	f.Add([]byte("nodes: [{name: a, arch: amd64, cpu: {cores: 1}, memory: 1Gi, storage: 1Gi, accelerators: [{vendor: x}]}]"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		inv, err := Parse(data)
		if err != nil {
			return
		}
		if err := inv.Validate(); err != nil {
			t.Errorf("Parse accepted an invalid inventory: %v", err)
		}
	})
}
