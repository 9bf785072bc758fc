// Command chartvalues writes the Kueue configuration the operator's chart gives its Kueue subchart
// (kueue.managerConfig.controllerManagerConfigYaml in values.yaml) from internal/kueueconfig, so the chart,
// the local cluster and the worker's check share one definition. make generate runs it; make verify fails when
// values.yaml differs from what it writes.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/internal/kueueconfig"
)

func main() {
	values := flag.String("values", "package/helm/gpustack-operator/values.yaml", "the chart's values file to rewrite")
	flag.Parse()
	if err := run(*values); err != nil {
		fmt.Fprintln(os.Stderr, "chartvalues:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return errors.Wrap(err, "cannot read the chart's values")
	}
	cfg, err := kueueconfig.ChartConfiguration()
	if err != nil {
		return err
	}
	out, err := kueueconfig.SetChartValue(data, cfg)
	if err != nil {
		return errors.Wrapf(err, "cannot write the Kueue configuration into %s", path)
	}
	return errors.Wrap(os.WriteFile(path, out, 0o644), "cannot write the chart's values")
}
