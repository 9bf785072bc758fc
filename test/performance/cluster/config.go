package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"sigs.k8s.io/yaml"
)

// config is a named configuration of the harness (test/performance/configs/NAME.yaml): the cluster's size, how
// long it counts writes when nothing changes, and the thresholds its measures must stay within.
type config struct {
	Name      string `json:"name"`
	Nodes     int    `json:"nodes"`
	Workloads int    `json:"workloads"`
	// Quiet is how long the quiet window lasts, as Go writes a duration (1m, 5m).
	Quiet string `json:"quiet"`
	// Runs name the runs the thresholds were set from (date, commit, machine), in the order of their values.
	Runs       []string    `json:"runs"`
	Thresholds []threshold `json:"thresholds"`
}

// threshold bounds one measure: the mean of what the configuration's runs measured, plus a margin for the
// machine's noise.
type threshold struct {
	Measure string `json:"measure"`
	// Bound is max (the measure may not exceed the limit: times, memory, writes) or min (it may not fall below
	// it: rates).
	Bound string `json:"bound"`
	// Values are what each of the runs measured.
	Values []float64 `json:"values"`
	// Margin is the fraction the limit leaves beyond the mean: the limit is mean × (1 + margin) for max and
	// mean ÷ (1 + margin) for min.
	Margin float64 `json:"margin"`
}

// mean is the mean of the runs' values.
func (t threshold) mean() float64 {
	sum := 0.0
	for _, v := range t.Values {
		sum += v
	}
	return sum / float64(len(t.Values))
}

// limit is the bound the measure may not cross.
func (t threshold) limit() float64 {
	if t.Bound == "min" {
		return t.mean() / (1 + t.Margin)
	}
	return t.mean() * (1 + t.Margin)
}

// loadConfig reads and checks a configuration file.
func loadConfig(path string) (*config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the configuration")
	}
	c := &config{}
	if err := yaml.UnmarshalStrict(data, c); err != nil {
		return nil, errors.Wrapf(err, "cannot decode %s", path)
	}
	return c, errors.Wrapf(c.validate(), "invalid configuration %s", path)
}

// validate says which field of the configuration is wrong, if one is.
func (c *config) validate() error {
	switch {
	case c.Name == "":
		return errors.New("name: empty")
	case c.Nodes <= 0:
		return errors.Errorf("nodes: %d, not a positive count", c.Nodes)
	case c.Workloads <= 0:
		return errors.Errorf("workloads: %d, not a positive count", c.Workloads)
	case len(c.Runs) == 0:
		return errors.New("runs: none, so the thresholds come from nowhere")
	}
	if d, err := time.ParseDuration(c.Quiet); err != nil || d <= 0 {
		return errors.Errorf("quiet: %q, not a positive duration", c.Quiet)
	}
	seen := map[string]bool{}
	for i, t := range c.Thresholds {
		switch {
		case t.Measure == "" || seen[t.Measure]:
			return errors.Errorf("thresholds[%d].measure: %q, empty or named twice", i, t.Measure)
		case t.Bound != "max" && t.Bound != "min":
			return errors.Errorf("thresholds[%d].bound: %q, not max or min", i, t.Bound)
		case len(t.Values) != len(c.Runs):
			return errors.Errorf("thresholds[%d].values: %d values for %d runs", i, len(t.Values), len(c.Runs))
		case t.Margin < 0:
			return errors.Errorf("thresholds[%d].margin: %g, below zero", i, t.Margin)
		}
		seen[t.Measure] = true
	}
	return nil
}

// quiet is the quiet window's length (validate has parsed it).
func (c *config) quiet() time.Duration {
	d, _ := time.ParseDuration(c.Quiet)
	return d
}

// crossings says which of the thresholds the run crossed, and which measures it did not take.
func crossings(r *result, thresholds []threshold) []string {
	taken := map[string]measure{}
	for _, m := range r.Measures {
		taken[m.Name] = m
	}
	var out []string
	for _, t := range thresholds {
		m, ok := taken[t.Measure]
		if !ok {
			out = append(out, t.Measure+": not measured")
			continue
		}
		limit := t.limit()
		if (t.Bound == "max" && m.Value > limit) || (t.Bound == "min" && m.Value < limit) {
			side := map[string]string{"max": "above", "min": "below"}[t.Bound]
			runs := fmt.Sprintf("%d runs", len(t.Values))
			if len(t.Values) == 1 {
				runs = "1 run"
			}
			value := strings.TrimSpace(format(m.Value) + " " + m.Unit)
			out = append(out, fmt.Sprintf("%s: %s, %s its threshold %s (the mean of %s, %s, with a margin of %s%%)",
				t.Measure, value, side, format(limit), runs, format(t.mean()), format(t.Margin*100)))
		}
	}
	return out
}

// report prints the crossings, or that the run stayed within every threshold.
func report(c *config, crossed []string) string {
	if len(crossed) == 0 {
		return fmt.Sprintf("within the %d thresholds of configuration %s\n", len(c.Thresholds), c.Name)
	}
	return fmt.Sprintf("crossed %d of the %d thresholds of configuration %s:\n  %s\n", len(crossed), len(c.Thresholds), c.Name,
		strings.Join(crossed, "\n  "))
}
