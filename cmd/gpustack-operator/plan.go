package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/internal/plan"
	"github.com/gpustack/gpustack-operator/internal/settings"
	"github.com/gpustack/gpustack-operator/providers/simulated"
)

// setFlags collects repeated --set NAME=VALUE flags.
type setFlags map[string]string

// String renders the flags for flag's usage output.
func (s setFlags) String() string { return fmt.Sprint(map[string]string(s)) }

// Set records one NAME=VALUE flag.
func (s setFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok {
		return errors.Errorf("--set %q: want NAME=VALUE", v)
	}
	s[name] = value
	return nil
}

func runPlan(args []string) error {
	fs := flag.NewFlagSet("plan", flag.ExitOnError)
	file := fs.String("inventory", "", "inventory file of the cluster to plan (required)")
	output := fs.String("o", "table", "output: table, yaml (the composed objects) or composites (the composite resources Crossplane would render)")
	namespaces := fs.String("namespaces", strings.Join(plan.DefaultNamespaces, ","), "comma-separated namespaces that get entrance LocalQueues")
	sets := setFlags{}
	fs.Var(sets, "set", "a setting, NAME=VALUE (repeatable), e.g. --set instance-type-aware-cpu-manufacturer=true")
	_ = fs.Parse(args)
	if *file == "" {
		return errors.New("--inventory is required")
	}
	inv, err := simulated.Load(*file)
	if err != nil {
		return err
	}
	values, err := settings.Parse(sets)
	if err != nil {
		return err
	}
	r, err := plan.Plan(context.Background(), inv, values.Functions(), strings.Split(*namespaces, ","))
	if err != nil {
		return err
	}
	for _, w := range r.Warnings {
		fmt.Fprintln(os.Stderr, "warning:", w)
	}
	switch *output {
	case "table":
		return r.WriteTables(os.Stdout)
	case "yaml":
		return r.WriteYAML(os.Stdout)
	case "composites":
		return r.WriteComposites(os.Stdout)
	}
	return errors.Errorf("-o %q: want table, yaml or composites", *output)
}
