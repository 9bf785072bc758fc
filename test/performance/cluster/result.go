package main

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// measure is one number the harness took.
type measure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
	// Goal is the goal for it, empty where it has none.
	Goal string `json:"goal,omitempty"`
}

// result is one run of the harness.
type result struct {
	Date      string    `json:"date"`
	Machine   string    `json:"machine"`
	Nodes     int       `json:"nodes"`
	Workloads int       `json:"workloads"`
	Measures  []measure `json:"measures"`
	// QuietByResource says what the quiet-window writes were, by resource.
	QuietByResource map[string]int `json:"quietByResource,omitempty"`
}

// add records a measure and prints it at once, so a run that fails later still shows what it took.
func (r *result) add(name string, value float64, unit, goal string) {
	r.Measures = append(r.Measures, measure{Name: name, Value: value, Unit: unit, Goal: goal})
	fmt.Fprintf(os.Stderr, ">>   %s: %s %s\n", name, format(value), unit)
}

// print writes the table, then one `name: value unit` line per measure.
func (r *result) print(w io.Writer) {
	fmt.Fprintf(w, "bench-cluster: %d nodes, %d cards, %d workloads; %s; %s\n\n", r.Nodes, r.Nodes*cardsPerNode, r.Workloads, r.Machine, r.Date)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEASURE\tVALUE\tUNIT\tGOAL")
	for _, m := range r.Measures {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Name, format(m.Value), m.Unit, m.Goal)
	}
	_ = tw.Flush()
	if len(r.QuietByResource) > 0 {
		fmt.Fprintf(w, "\nquiet-window writes by resource: %v\n", r.QuietByResource)
	}
	fmt.Fprintln(w)
	for _, m := range r.Measures {
		fmt.Fprintf(w, "%s: %s %s\n", m.Name, format(m.Value), m.Unit)
	}
}

// format writes a value with at most three decimals.
func format(v float64) string { return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64) }

// results is the results file: the newest run at each node count.
type results struct {
	Runs []*result `json:"runs"`
}

// record puts a run into the results file, in place of an earlier run at the same node count.
func record(path string, r *result) error {
	var all results
	if err := readResults(path, &all); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	all.Runs = slices.DeleteFunc(all.Runs, func(old *result) bool { return old.Nodes == r.Nodes })
	all.Runs = append(all.Runs, r)
	slices.SortFunc(all.Runs, func(a, b *result) int { return a.Nodes - b.Nodes })
	out, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return errors.Wrap(err, "cannot encode the results")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return errors.Wrap(err, "cannot create the results directory")
	}
	return errors.Wrapf(os.WriteFile(path, append(out, '\n'), 0o644), "cannot write %s", path)
}

// readResults decodes a results file.
func readResults(path string, into *results) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return errors.Wrapf(err, "cannot read %s", path)
	}
	return errors.Wrapf(json.Unmarshal(data, into), "cannot decode %s", path)
}
