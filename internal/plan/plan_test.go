package plan

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/internal/settings"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// step1 is the seed walkthrough's Step 1, with SH once-max as the card-count reading (see docs/walkthrough.md, Step 1) and the
// resourceflavor table without its AGE column.
const step1 = `$ kubectl get resourceflavor
NAME
gpustack--amd-epyc-7r13-linux-amd64-16c
gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64-1d
gpustack--amd-epyc-7r32-linux-amd64-4c
gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-1d
gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-4d
gpustack--intel-xeon-platinum-8259cl-linux-amd64-48c
gpustack--intel-xeon-platinum-8259cl-linux-amd64-4c

$ kubectl get clusterqueue
NAME                                    COHORT   PENDING WORKLOADS
gpustack--generic-linux-amd64                    0
gpustack--nvidia-a10g-linux-amd64                0
gpustack--nvidia-tesla-t4-linux-amd64            0

$ kubectl get instancetype
NAME                                    ENTRANCE                          UNIT(CPU/RAM)/STORAGE   ACCELERATOR(EX/SH/SL/PT)   CPU     PHASE
gpustack--generic-linux-amd64           gpustack-fnv64-3b93966fd73eb9ec   1/2Gi/100Gi             0/0 0/0 0/0 0/0            48/72   Active
gpustack--nvidia-a10g-linux-amd64       gpustack-fnv64-c4680bb149644f1c   8/64Gi/100Gi            1/1 1/10 100/100 0/0       0/0     Active
gpustack--nvidia-tesla-t4-linux-amd64   gpustack-fnv64-6b371caa2da0b799   8/32Gi/100Gi            4/5 4/50 100/500 0/0       0/0     Active

$ kubectl get instancetypeflavor
NAME                        GENERALGROUP   ACCELERATORGROUP   ACCELERATABLE   MANUFACTURER   PRODUCT       MEMORY   CORES   SLICEABLE
gpustack--generic           generic                           false           generic
gpustack--nvidia-a10g                      nvidia-a10g        true            nvidia         NVIDIA-A10G   24Gi     10240   true
gpustack--nvidia-tesla-t4                  nvidia-tesla-t4    true            nvidia         Tesla-T4      16Gi     2560    true
`

// step5Types is Step 5's instancetype table after the awareness flip, less the collapsed rows that only a
// cluster keeps (derivation is create-only).
const step5Types = `NAME                                                                ENTRANCE                          UNIT(CPU/RAM)/STORAGE   ACCELERATOR(EX/SH/SL/PT)   CPU     PHASE
gpustack--amd-epyc-7r13-linux-amd64                                 gpustack-fnv64-8dde992f64a17a2f   1/2Gi/100Gi             0/0 0/0 0/0 0/0            16/16   Active
gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64                    gpustack-fnv64-029fd9550e0c70bd   8/64Gi/100Gi            1/1 1/10 100/100 0/0       0/0     Active
gpustack--amd-epyc-7r32-linux-amd64                                 gpustack-fnv64-d3390f10cd57a632   1/2Gi/100Gi             0/0 0/0 0/0 0/0            4/4     Active
gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64   gpustack-fnv64-5b59e508edc027b7   8/32Gi/100Gi            4/5 4/50 100/500 0/0       0/0     Active
gpustack--intel-xeon-platinum-8259cl-linux-amd64                    gpustack-fnv64-c6aee2b7b5c4dc6b   1/2Gi/100Gi             0/0 0/0 0/0 0/0            48/52   Active
`

func TestPlanWalkthrough(t *testing.T) {
	inv, err := simulated.Load(testenv.Path("examples", "clusters", "walkthrough.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason   string
		settings map[string]string
		section  string
		want     string
	}{
		"Step1": {
			reason: "plan prints Step 1's four tables.",
			want:   step1,
		},
		"Step5": {
			reason:   "With CPU awareness on, plan prints the CPU-aware pools of Step 5.",
			settings: map[string]string{"instance-type-aware-cpu-manufacturer": "true"},
			section:  "instancetype",
			want:     step5Types,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			values, err := settings.Parse(tc.settings)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Plan(context.Background(), inv, values.Functions(), DefaultNamespaces)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := r.WriteTables(&out); err != nil {
				t.Fatal(err)
			}
			got := trimLines(out.String())
			if tc.section != "" {
				got = section(got, tc.section)
			}
			if diff := cmp.Diff(trimLines(tc.want), got); diff != "" {
				t.Errorf("%s\nWriteTables(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// trimLines drops trailing spaces, which tabwriter leaves after empty last cells.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// section returns one table of the output, without its heading.
func section(out, kind string) string {
	_, rest, _ := strings.Cut(out, "$ kubectl get "+kind+"\n")
	table, _, _ := strings.Cut(rest, "\n\n")
	return table + "\n"
}
