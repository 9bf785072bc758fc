package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestConfigs reads every named configuration: each is valid, is named after its file, and bounds only measures
// the harness has recorded in the results file.
func TestConfigs(t *testing.T) {
	var recorded results
	if err := readResults(filepath.Join("..", "..", "..", "docs", "bench", "cluster-results.json"), &recorded); err != nil {
		t.Fatal(err)
	}
	taken := map[string]bool{}
	for _, r := range recorded.Runs {
		for _, m := range r.Measures {
			taken[m.Name] = true
		}
	}
	paths, err := filepath.Glob(filepath.Join("..", "configs", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no configuration under test/performance/configs: %v", err)
	}
	for _, path := range paths {
		c, err := loadConfig(path)
		if err != nil {
			t.Errorf("loadConfig(%s): %v", path, err)
			continue
		}
		if want := strings.TrimSuffix(filepath.Base(path), ".yaml"); c.Name != want {
			t.Errorf("%s: name %q, want %q (the file's name)", path, c.Name, want)
		}
		for _, th := range c.Thresholds {
			if !taken[th.Measure] {
				t.Errorf("%s: threshold on %q, a measure no recorded run took", path, th.Measure)
			}
		}
	}
}

func TestLoadConfigErrors(t *testing.T) {
	valid := "name: x\nnodes: 10\nworkloads: 5\nquiet: 1m\nruns: [a run]\n"
	cases := map[string]struct {
		reason string
		text   string
		want   string
	}{
		"Valid":        {reason: "a configuration without thresholds is valid", text: valid},
		"UnknownField": {reason: "a misspelt field is an error, not ignored", text: valid + "thresold: []\n", want: "unknown field"},
		"NoName":       {reason: "the name is required", text: strings.Replace(valid, "name: x", "name: \"\"", 1), want: "name: empty"},
		"NoNodes":      {reason: "the size must be positive", text: strings.Replace(valid, "nodes: 10", "nodes: 0", 1), want: "nodes: 0"},
		"BadQuiet":     {reason: "the quiet window is a Go duration", text: strings.Replace(valid, "quiet: 1m", "quiet: soon", 1), want: `quiet: "soon"`},
		"NoRuns":       {reason: "thresholds come from runs", text: strings.Replace(valid, "runs: [a run]", "runs: []", 1), want: "runs: none"},
		"BadBound": {reason: "a bound is max or min", want: "thresholds[0].bound",
			text: valid + "thresholds: [{measure: m, bound: most, values: [1], margin: 0.5}]\n"},
		"ValuesPerRun": {reason: "each run gives each threshold one value", want: "thresholds[0].values: 2 values for 1 runs",
			text: valid + "thresholds: [{measure: m, bound: max, values: [1, 2], margin: 0.5}]\n"},
		"Twice": {reason: "a measure is bounded once", want: `thresholds[1].measure: "m"`,
			text: valid + "thresholds: [{measure: m, bound: max, values: [1]}, {measure: m, bound: min, values: [1]}]\n"},
		"NegativeMargin": {reason: "a margin below zero would fail the runs it came from", want: "thresholds[0].margin",
			text: valid + "thresholds: [{measure: m, bound: max, values: [1], margin: -0.1}]\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.yaml")
			if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := loadConfig(path)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if (tc.want == "") != (err == nil) || !strings.Contains(got, tc.want) || (err != nil && !strings.Contains(got, path)) {
				t.Errorf("%s\nloadConfig(...): got error %q, want one naming the file and containing %q", tc.reason, got, tc.want)
			}
		})
	}
}

func TestCrossings(t *testing.T) {
	run := &result{Measures: []measure{
		{Name: "check-p99", Value: 120, Unit: "ms"},
		{Name: "per-second", Value: 40, Unit: "/s"},
		{Name: "quiet-writes", Value: 1, Unit: "count"},
		{Name: "ratio", Value: 1.8},
	}}
	cases := map[string]struct {
		reason     string
		thresholds []threshold
		want       []string
	}{
		"Within": {reason: "120 ms is within the mean of 60 and 100 (80) plus half",
			thresholds: []threshold{{Measure: "check-p99", Bound: "max", Values: []float64{60, 100}, Margin: 0.5}}},
		"AboveTheMean": {reason: "120 ms is above the mean of 60 and 100 (80) plus a quarter",
			thresholds: []threshold{{Measure: "check-p99", Bound: "max", Values: []float64{60, 100}, Margin: 0.25}},
			want:       []string{"check-p99: 120 ms, above its threshold 100 (the mean of 2 runs, 80, with a margin of 25%)"}},
		"Above": {reason: "120 ms is above 100 ms plus a tenth",
			thresholds: []threshold{{Measure: "check-p99", Bound: "max", Values: []float64{100}, Margin: 0.1}},
			want:       []string{"check-p99: 120 ms, above its threshold 110 (the mean of 1 run, 100, with a margin of 10%)"}},
		"Below": {reason: "40 a second is below 90 a second divided by 1.5",
			thresholds: []threshold{{Measure: "per-second", Bound: "min", Values: []float64{90}, Margin: 0.5}},
			want:       []string{"per-second: 40 /s, below its threshold 60 (the mean of 1 run, 90, with a margin of 50%)"}},
		"RateWithin": {reason: "40 a second is within 50 a second divided by 1.5",
			thresholds: []threshold{{Measure: "per-second", Bound: "min", Values: []float64{50}, Margin: 0.5}}},
		"ZeroWrites": {reason: "one write in a quiet cluster crosses a threshold of none",
			thresholds: []threshold{{Measure: "quiet-writes", Bound: "max", Values: []float64{0}}},
			want:       []string{"quiet-writes: 1 count, above its threshold 0 (the mean of 1 run, 0, with a margin of 0%)"}},
		"NoUnit": {reason: "a measure without a unit (a ratio) is written without one",
			thresholds: []threshold{{Measure: "ratio", Bound: "max", Values: []float64{1.2}, Margin: 0.3}},
			want:       []string{"ratio: 1.8, above its threshold 1.56 (the mean of 1 run, 1.2, with a margin of 30%)"}},
		"NotMeasured": {reason: "a measure the run did not take is reported, not passed",
			thresholds: []threshold{{Measure: "worker-rss", Bound: "max", Values: []float64{100}}},
			want:       []string{"worker-rss: not measured"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, crossings(run, tc.thresholds)); diff != "" {
				t.Errorf("%s\ncrossings(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
