// Command benchplot draws converge time and the worker's memory against node count from the results file of
// `make bench-cluster`, one point per run.
//
//	go run . --in ../../../docs/bench/cluster-results.json --out ../../../docs/bench/cluster.png
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// results is the part of the harness's results file the plot reads.
type results struct {
	Runs []struct {
		Nodes    int `json:"nodes"`
		Measures []struct {
			Name  string  `json:"name"`
			Value float64 `json:"value"`
		} `json:"measures"`
	} `json:"runs"`
}

// series returns one measure against node count, over the runs that have it.
func (r results) series(name string) plotter.XYs {
	var out plotter.XYs
	for _, run := range r.Runs {
		for _, m := range run.Measures {
			if m.Name == name {
				out = append(out, plotter.XY{X: float64(run.Nodes), Y: m.Value})
			}
		}
	}
	return out
}

func main() {
	in := flag.String("in", "docs/bench/cluster-results.json", "results file of the harness")
	out := flag.String("out", "docs/bench/cluster.png", "PNG to write")
	flag.Parse()
	if err := render(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "benchplot:", err)
		os.Exit(1)
	}
}

// panel is one of the plot's two charts.
func panel(title, ylabel string, lines ...any) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "nodes (8 cards each)"
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return nil, err
	}
	p.Legend.Top, p.Legend.Left = true, true
	return p, nil
}

func render(in, out string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var r results
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("cannot decode %s: %w", in, err)
	}
	converge, err := panel("Node change to InstanceType status", "ms",
		"p50", r.series("converge-p50"), "p99", r.series("converge-p99"))
	if err != nil {
		return err
	}
	memory, err := panel("Worker memory", "MiB", "RSS", r.series("worker-rss"), "peak RSS", r.series("worker-rss-peak"))
	if err != nil {
		return err
	}
	const w, h = 12 * vg.Inch, 4.5 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 4, PadY: vg.Inch / 8, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8,
		PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	canvases := plot.Align([][]*plot.Plot{{converge, memory}}, tiles, dc)
	converge.Draw(canvases[0][0])
	memory.Draw(canvases[0][1])
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
