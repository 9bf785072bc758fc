// Package walkthrough holds what the seed walkthrough shows, for the tests that check a cluster against it:
// the end-to-end suite and the Helm install test.
package walkthrough

import "strings"

// Step1Types is `kubectl get instancetype` in Step 1: the three pools the walkthrough's four nodes make.
var Step1Types = [][]string{
	{"NAME", "ENTRANCE", "UNIT(CPU/RAM)/STORAGE", "ACCELERATOR(EX/SH/SL/PT)", "CPU", "PHASE"},
	{"gpustack--generic-linux-amd64", "gpustack-fnv64-3b93966fd73eb9ec", "1/2Gi/100Gi", "0/0 0/0 0/0 0/0", "48/72", "Active"},
	{"gpustack--nvidia-a10g-linux-amd64", "gpustack-fnv64-c4680bb149644f1c", "8/64Gi/100Gi", "1/1 1/10 100/100 0/0", "0/0", "Active"},
	{"gpustack--nvidia-tesla-t4-linux-amd64", "gpustack-fnv64-6b371caa2da0b799", "8/32Gi/100Gi", "4/5 4/50 100/500 0/0", "0/0", "Active"},
}

// Step1Flavors are `kubectl get resourceflavor` in Step 1: one per (gKey, [aKey,] os, arch, count).
var Step1Flavors = []string{
	"gpustack--amd-epyc-7r13-linux-amd64-16c", "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64-1d",
	"gpustack--amd-epyc-7r32-linux-amd64-4c", "gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-1d",
	"gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-4d",
	"gpustack--intel-xeon-platinum-8259cl-linux-amd64-48c", "gpustack--intel-xeon-platinum-8259cl-linux-amd64-4c",
}

// ParseTable splits kubectl's table output on runs of two or more spaces, keeping empty cells by their
// column positions.
func ParseTable(out string) [][]string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := lines[0]
	var starts []int
	for i := range header {
		// A column starts after two or more spaces: a header such as PENDING WORKLOADS holds one.
		if header[i] != ' ' && (i == 0 || i >= 2 && header[i-1] == ' ' && header[i-2] == ' ') {
			starts = append(starts, i)
		}
	}
	var table [][]string
	for _, l := range lines {
		var row []string
		for j, s := range starts {
			end := len(l)
			if j+1 < len(starts) && starts[j+1] < end {
				end = starts[j+1]
			}
			cell := ""
			if s < len(l) {
				cell = strings.TrimSpace(l[s:end])
			}
			row = append(row, cell)
		}
		table = append(table, row)
	}
	return table
}
