package cpuinfo

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// xeon is two logical processors of one core of an Intel Xeon, as a Linux kernel lists them.
const xeon = `processor	: 0
vendor_id	: GenuineIntel
cpu family	: 6
model		: 85
model name	: Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz
stepping	: 7
physical id	: 0
siblings	: 2
core id		: 0
cpu cores	: 1
clflush size	: 64

processor	: 1
vendor_id	: GenuineIntel
cpu family	: 6
model		: 85
model name	: Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz
stepping	: 7
physical id	: 0
siblings	: 2
core id		: 0
cpu cores	: 1
clflush size	: 64
`

// arm is two cores of an ARM server, whose kernel shows neither a model name nor core ids.
const arm = `processor	: 0
BogoMIPS	: 50.00
CPU implementer	: 0x41

processor	: 1
BogoMIPS	: 50.00
CPU implementer	: 0x41
`

func TestParse(t *testing.T) {
	type want struct {
		cpu   CPU
		attrs map[string]string
		err   bool
	}
	cases := map[string]struct {
		reason string
		data   string
		want   want
	}{
		"Xeon": {
			reason: "The brand string, the vendor by cpuid's name, the numbers as the kernel shows them; two threads of one core.",
			data:   xeon,
			want: want{
				cpu: CPU{Name: "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz", Vendor: "Intel", Family: "6", Model: "85", Stepping: "7",
					LogicalCores: 2, PhysicalCores: 1, CacheLine: 64},
				attrs: map[string]string{"name": "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz", "family": "6", "stepping": "7",
					"logical-cores": "2", "physical-cores": "1", "threads-per-core": "2", "cache-line": "64"},
			},
		},
		"ARM": {
			reason: "Without a model name or core ids, only the counts are reported, one thread a core.",
			data:   arm,
			want: want{
				cpu:   CPU{LogicalCores: 2, PhysicalCores: 2},
				attrs: map[string]string{"logical-cores": "2", "physical-cores": "2", "threads-per-core": "1"},
			},
		},
		"Empty": {
			reason: "A file that lists no processor is an error, not a CPU of zero cores.",
			data:   "flags: fpu\n",
			want:   want{err: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cpu, err := Parse([]byte(tc.data))
			got := want{cpu: cpu, err: err != nil}
			if err == nil {
				got.attrs = cpu.Attributes()
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nParse(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
