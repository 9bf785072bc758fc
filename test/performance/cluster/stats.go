package main

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/utils/ptr"
)

// percentile returns the p-th percentile (0 < p <= 100) of samples by the nearest-rank method, 0 for none.
func percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

// histogramQuantile estimates the q-quantile (0 < q <= 1) of a Prometheus histogram as PromQL's
// histogram_quantile does: linearly inside the bucket the rank falls in. It returns NaN for an empty histogram
// and the highest finite bound when the rank falls in the +Inf bucket.
func histogramQuantile(q float64, h *dto.Histogram) float64 {
	total := float64(h.GetSampleCount())
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for _, b := range h.GetBucket() {
		upper, count := b.GetUpperBound(), float64(b.GetCumulativeCount())
		if count >= rank {
			if count == below {
				return upper
			}
			return lower + (upper-lower)*(rank-below)/(count-below)
		}
		lower, below = upper, count
	}
	return lower
}

// auditEvent is the part of an API server audit event the write count reads.
type auditEvent struct {
	Verb      string `json:"verb"`
	Stage     string `json:"stage"`
	ObjectRef *struct {
		Resource string `json:"resource"`
	} `json:"objectRef"`
	StageTimestamp time.Time `json:"stageTimestamp"`
}

// writeCount is what an audit log says a component wrote in a window.
type writeCount struct {
	// Writes are the completed writes of anything but Leases and reviews.
	Writes int
	// Leases are the completed writes of Leases: leader election renewing its lock, which a quiet cluster
	// still causes by design.
	Leases int
	// Reviews are the completed creates of access and token reviews (SubjectAccessReviews, TokenReviews and
	// their kinds): an aggregated API server's delegated authorization (the settings API's) asks them about
	// requests it serves, the controller manager's discovery among them; the API server stores nothing of them.
	Reviews int
	// ByResource counts Writes by resource, for the table.
	ByResource map[string]int
}

// countWrites reads an audit log (JSON lines, as the API server writes with --audit-log-format=json) and
// counts the completed write requests whose stage ended in [from, to).
func countWrites(r io.Reader, from, to time.Time) (writeCount, error) {
	out := writeCount{ByResource: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return out, errors.Wrap(err, "cannot decode an audit event")
		}
		if e.Stage != "ResponseComplete" || e.StageTimestamp.Before(from) || !e.StageTimestamp.Before(to) {
			continue
		}
		switch e.Verb {
		case "create", "update", "patch", "delete", "deletecollection":
		default:
			continue
		}
		resource := ""
		if e.ObjectRef != nil {
			resource = e.ObjectRef.Resource
		}
		switch {
		case resource == "leases":
			out.Leases++
			continue
		case strings.HasSuffix(resource, "reviews"):
			out.Reviews++
			continue
		}
		out.Writes++
		out.ByResource[resource]++
	}
	return out, errors.Wrap(sc.Err(), "cannot read the audit log")
}

// cpuTicks is a process's user and system time in clock ticks, from /proc/<pid>/stat.
func cpuTicks(stat string) (int64, error) {
	// The command name (field 2) is in parentheses and may hold spaces: count fields after its closing one.
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, errors.New("cannot parse /proc stat: no command name")
	}
	fields := strings.Fields(stat[end+1:])
	// utime and stime are fields 14 and 15; fields[0] here is field 3.
	if len(fields) < 13 {
		return 0, errors.New("cannot parse /proc stat: too few fields")
	}
	utime, err := strconv.ParseInt(fields[11], 10, 64)
	if err != nil {
		return 0, errors.Wrap(err, "cannot parse utime")
	}
	stime, err := strconv.ParseInt(fields[12], 10, 64)
	if err != nil {
		return 0, errors.Wrap(err, "cannot parse stime")
	}
	return utime + stime, nil
}

// statusKiB reads a "Name:   1234 kB" line of /proc/<pid>/status.
func statusKiB(status, name string) (int64, error) {
	for line := range strings.SplitSeq(status, "\n") {
		rest, ok := strings.CutPrefix(line, name+":")
		if !ok {
			continue
		}
		return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
	}
	return 0, errors.Errorf("no %s in /proc status", name)
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on every Linux this runs on.
const clockTicks = 100

// procSample is one reading of a process's CPU time and memory.
type procSample struct {
	at           time.Time
	ticks        int64
	rssKiB, hwmK int64
}

// sampleProc reads /proc for a process.
func sampleProc(pid int) (procSample, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return procSample{}, errors.Wrap(err, "cannot read the worker's /proc stat")
	}
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return procSample{}, errors.Wrap(err, "cannot read the worker's /proc status")
	}
	s := procSample{at: time.Now()}
	if s.ticks, err = cpuTicks(string(stat)); err != nil {
		return s, err
	}
	if s.rssKiB, err = statusKiB(string(status), "VmRSS"); err != nil {
		return s, err
	}
	s.hwmK, err = statusKiB(string(status), "VmHWM")
	return s, err
}

// meanCores is the CPU a process used between two samples, in cores.
func meanCores(from, to procSample) float64 {
	wall := to.at.Sub(from.at).Seconds()
	if wall <= 0 {
		return 0
	}
	return float64(to.ticks-from.ticks) / clockTicks / wall
}

// mergedHistogram adds up the series of a histogram family whose labels include labels (one per outcome, say)
// into one: bucket by bucket, by upper bound. A family absent from the scrape merges to an empty histogram.
func mergedHistogram(families map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Histogram {
	counts := map[float64]uint64{}
	var total uint64
	var sum float64
	for _, m := range families[name].GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		h := m.GetHistogram()
		total += h.GetSampleCount()
		sum += h.GetSampleSum()
		for _, b := range h.GetBucket() {
			counts[b.GetUpperBound()] += b.GetCumulativeCount()
		}
	}
	return histogramOf(counts, total, sum)
}

// histogramDelta is what a cumulative histogram gained from before to after: the samples observed in between.
func histogramDelta(before, after *dto.Histogram) *dto.Histogram {
	counts := map[float64]uint64{}
	for _, b := range after.GetBucket() {
		counts[b.GetUpperBound()] += b.GetCumulativeCount()
	}
	for _, b := range before.GetBucket() {
		counts[b.GetUpperBound()] -= min(counts[b.GetUpperBound()], b.GetCumulativeCount())
	}
	return histogramOf(counts, after.GetSampleCount()-min(after.GetSampleCount(), before.GetSampleCount()),
		after.GetSampleSum()-before.GetSampleSum())
}

// histogramOf builds a histogram from cumulative counts by upper bound, its buckets in order.
func histogramOf(counts map[float64]uint64, total uint64, sum float64) *dto.Histogram {
	bounds := make([]float64, 0, len(counts))
	for b := range counts {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	h := &dto.Histogram{SampleCount: &total, SampleSum: &sum}
	for _, b := range bounds {
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptr.To(b), CumulativeCount: ptr.To(counts[b])})
	}
	return h
}

// hasLabels reports whether a series carries every one of labels.
func hasLabels(m *dto.Metric, labels map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := labels[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(labels)
}
