package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/utils/ptr"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	cases := map[string]struct {
		reason  string
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		"None":        {reason: "no samples give 0", p: 50, want: 0},
		"One":         {reason: "one sample is every percentile", samples: ms(7), p: 99, want: 7 * time.Millisecond},
		"MedianOdd":   {reason: "the median of five unsorted samples is the third smallest", samples: ms(5, 1, 4, 2, 3), p: 50, want: 3 * time.Millisecond},
		"MedianEven":  {reason: "nearest rank takes the lower middle of an even count", samples: ms(4, 1, 3, 2), p: 50, want: 2 * time.Millisecond},
		"P99Of100":    {reason: "the 99th of 1..100 is 99", samples: ms(seq(100)...), p: 99, want: 99 * time.Millisecond},
		"P99Of50":     {reason: "of 50 samples the 99th percentile is the largest", samples: ms(seq(50)...), p: 99, want: 50 * time.Millisecond},
		"P100":        {reason: "the 100th percentile is the maximum", samples: ms(3, 9, 1), p: 100, want: 9 * time.Millisecond},
		"TinyPercent": {reason: "a rank below one is the minimum", samples: ms(3, 9, 1), p: 1, want: time.Millisecond},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, percentile(tc.samples, tc.p)); diff != "" {
				t.Errorf("%s\npercentile(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = n - i
	}
	return out
}

func TestHistogramQuantile(t *testing.T) {
	hist := func(count uint64, buckets ...[2]float64) *dto.Histogram {
		h := &dto.Histogram{SampleCount: ptr.To(count)}
		for _, b := range buckets {
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptr.To(b[0]), CumulativeCount: ptr.To(uint64(b[1]))})
		}
		return h
	}
	cases := map[string]struct {
		reason string
		h      *dto.Histogram
		q      float64
		want   float64
	}{
		"Interpolated": {reason: "the rank 99 of 100 falls in (2, 4] holding 90..100: 2 + 2*9/10",
			h: hist(100, [2]float64{1, 50}, [2]float64{2, 90}, [2]float64{4, 100}), q: 0.99, want: 3.8},
		"FirstBucket": {reason: "the first bucket starts at 0",
			h: hist(10, [2]float64{1, 10}, [2]float64{2, 10}), q: 0.5, want: 0.5},
		"PastTheLastBound": {reason: "samples beyond the highest bound report that bound",
			h: hist(10, [2]float64{1, 5}, [2]float64{2, 8}), q: 0.99, want: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := histogramQuantile(tc.q, tc.h); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("%s\nhistogramQuantile(...): want %v, got %v", tc.reason, tc.want, got)
			}
		})
	}
	if got := histogramQuantile(0.99, &dto.Histogram{}); !math.IsNaN(got) {
		t.Errorf("an empty histogram: want NaN, got %v", got)
	}
}

func TestCountWrites(t *testing.T) {
	log := strings.Join([]string{
		`{"verb":"patch","stage":"ResponseComplete","objectRef":{"resource":"instancetypes"},"stageTimestamp":"2026-12-01T10:00:01Z"}`,
		`{"verb":"update","stage":"ResponseComplete","objectRef":{"resource":"leases"},"stageTimestamp":"2026-12-01T10:00:02Z"}`,
		`{"verb":"create","stage":"ResponseStarted","objectRef":{"resource":"pods"},"stageTimestamp":"2026-12-01T10:00:03Z"}`,
		`{"verb":"get","stage":"ResponseComplete","objectRef":{"resource":"pods"},"stageTimestamp":"2026-12-01T10:00:03Z"}`,
		`{"verb":"create","stage":"ResponseComplete","objectRef":{"resource":"events"},"stageTimestamp":"2026-12-01T10:00:04Z"}`,
		`{"verb":"create","stage":"ResponseComplete","objectRef":{"resource":"subjectaccessreviews"},"stageTimestamp":"2026-12-01T10:00:04Z"}`,
		`{"verb":"patch","stage":"ResponseComplete","objectRef":{"resource":"instancetypes"},"stageTimestamp":"2026-12-01T10:00:05Z"}`,
		`{"verb":"delete","stage":"ResponseComplete","objectRef":{"resource":"pods"},"stageTimestamp":"2026-12-01T09:59:59Z"}`,
	}, "\n")
	from := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	got, err := countWrites(strings.NewReader(log), from, from.Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := writeCount{Writes: 2, Leases: 1, Reviews: 1, ByResource: map[string]int{"instancetypes": 1, "events": 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("completed writes in [10:00:00, 10:00:05), Leases and reviews apart, a read and an unfinished stage left out\ncountWrites(...): -want, +got:\n%s", diff)
	}
	if _, err := countWrites(strings.NewReader("not json"), from, from); err == nil {
		t.Error("countWrites(garbage): want an error, got none")
	}
}

func TestProc(t *testing.T) {
	// A command name with spaces and parentheses must not shift the fields.
	stat := "4242 (gpustack (op) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 567 0 0 20 0 12 0 100 0 0"
	ticks, err := cpuTicks(stat)
	if err != nil {
		t.Fatal(err)
	}
	if ticks != 1234+567 {
		t.Errorf("cpuTicks(...): want utime+stime 1801, got %d", ticks)
	}
	if _, err := cpuTicks("4242 no parentheses"); err == nil {
		t.Error("cpuTicks without a command name: want an error, got none")
	}
	status := "Name:\tgpustack\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n"
	for name, want := range map[string]int64{"VmRSS": 102400, "VmHWM": 204800} {
		if got, err := statusKiB(status, name); err != nil || got != want {
			t.Errorf("statusKiB(%s): want %d, got %d (%v)", name, want, got, err)
		}
	}
	if _, err := statusKiB(status, "VmSwap"); err == nil {
		t.Error("statusKiB of a missing line: want an error, got none")
	}
	from, to := procSample{at: time.Unix(0, 0), ticks: 100}, procSample{at: time.Unix(10, 0), ticks: 600}
	if got := meanCores(from, to); math.Abs(got-0.5) > 1e-9 {
		t.Errorf("meanCores: 500 ticks (5 s of CPU) over 10 s: want 0.5, got %v", got)
	}
}

func TestPolicyPluginHistogram(t *testing.T) {
	// The policy plugin's two series, before and after a measure (another plugin's left out): 4 creates were
	// observed meanwhile, 3 of them within 1 ms.
	scrape := func(fast1, all1, fast2, all2 uint64, sum float64) map[string]*dto.MetricFamily {
		series := func(fast, all uint64, sum float64) *dto.Metric {
			return &dto.Metric{Label: []*dto.LabelPair{{Name: ptr.To("name"), Value: ptr.To("ValidatingAdmissionPolicy")}, {Name: ptr.To("operation"), Value: ptr.To("CREATE")}}, Histogram: &dto.Histogram{SampleCount: ptr.To(all), SampleSum: ptr.To(sum), Bucket: []*dto.Bucket{
				{UpperBound: ptr.To(0.001), CumulativeCount: ptr.To(fast)}, {UpperBound: ptr.To(0.01), CumulativeCount: ptr.To(all)}}}}
		}
		other := series(100, 100, 1)
		other.Label = []*dto.LabelPair{{Name: ptr.To("name"), Value: ptr.To("NamespaceLifecycle")}}
		return map[string]*dto.MetricFamily{"checks": {Metric: []*dto.Metric{series(fast1, all1, sum/2), series(fast2, all2, sum/2), other}}}
	}
	before := mergedHistogram(scrape(10, 10, 5, 6, 0.02), "checks", policyPluginLabels)
	after := mergedHistogram(scrape(12, 12, 6, 8, 0.03), "checks", policyPluginLabels)
	d := histogramDelta(before, after)
	if d.GetSampleCount() != 4 || math.Abs(d.GetSampleSum()-0.01) > 1e-9 {
		t.Errorf("histogramDelta: %d checks taking %g s, want 4 taking 0.01 s", d.GetSampleCount(), d.GetSampleSum())
	}
	if got := []uint64{d.GetBucket()[0].GetCumulativeCount(), d.GetBucket()[1].GetCumulativeCount()}; !slices.Equal(got, []uint64{3, 4}) {
		t.Errorf("histogramDelta's buckets: %v, want [3 4]", got)
	}
	if q := histogramQuantile(0.99, d); q <= 0.001 || q > 0.01 {
		t.Errorf("the 99th percentile of 3 checks within 1 ms and one within 10 ms: %g s", q)
	}
	if empty := mergedHistogram(map[string]*dto.MetricFamily{}, "checks", nil); empty.GetSampleCount() != 0 || len(empty.GetBucket()) != 0 {
		t.Errorf("a family absent from the scrape merges to an empty histogram: %v", empty)
	}
}
