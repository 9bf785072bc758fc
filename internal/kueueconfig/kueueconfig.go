// Package kueueconfig says what the Kueue controller's configuration must carry for the operator's queues to
// admit anything, and checks a running Kueue's configuration against it: the integrations that queue an
// Instance's Pod and a Job, the resource transformations that turn every vendor's accelerator requests into
// credits.gpustack.ai/<manufacturer>, the DeviceClass mappings that charge DRA claims in the same credits, and
// the resources no queue judges. Plain functions over the configuration's types, so the chart, the local
// cluster and the worker's check use one definition.
package kueueconfig

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/vendors"
)

// The ConfigMap, in Kueue's namespace (workerv1.KueueNamespace unless told), and the key Kueue's own manifests
// and chart keep its configuration in.
const (
	ConfigMap = "kueue-manager-config"
	ConfigKey = "controller_manager_config.yaml"
)

// Frameworks are the integrations the operator's workloads need: an Instance's Pod queues itself, and a
// queued Job is charged by its template.
var Frameworks = []string{"batch/job", "pod"}

// ExcludeResourcePrefixes are the resources no queue judges: memory, storage, the SSH sidecar's visibility,
// and every vendor's per-profile partition keys (<base>.partitioned.<kind>-<profile>), whose names a
// transformation cannot list ahead of the profiles; the partition is charged by its .partitioned.units. They
// are left out rather than ignored by quotaCheckStrategy IgnoreUndeclared (beta since Kueue v0.19): that
// strategy is one for the whole Kueue, and on a cluster's own Kueue it would change how every other team's
// queues judge their Workloads.
var ExcludeResourcePrefixes = excludeResourcePrefixes()

func excludeResourcePrefixes() []string {
	out := []string{"memory", "ephemeral-storage", "device.gpustack.ai/"}
	for _, v := range vendors.All() {
		if prefix := v.ProfilePrefix(); prefix != "" {
			out = append(out, prefix)
		}
	}
	return out
}

// Credits is the quota resource of a manufacturer.
func Credits(manufacturer string) corev1.ResourceName {
	return corev1.ResourceName("credits.gpustack.ai/" + manufacturer)
}

// Transformations returns, for every vendor, what Kueue must turn its requests into: a whole card M credits,
// a share M/10, a slice or partition unit 1 (a slice's units multiplied by its slice count); the slice count
// and budgets, which are for the scheduler and the device plugin, nothing.
func Transformations() []configapi.ResourceTransformation {
	replace := configapi.Replace
	var out []configapi.ResourceTransformation
	for _, v := range vendors.All() {
		credits := Credits(v.Key)
		to := func(input string, amount int64, multiplyBy string) configapi.ResourceTransformation {
			return configapi.ResourceTransformation{Input: corev1.ResourceName(input), Strategy: &replace,
				MultiplyBy: corev1.ResourceName(multiplyBy), Outputs: corev1.ResourceList{credits: *resource.NewQuantity(amount, resource.DecimalSI)}}
		}
		out = append(out,
			to(v.ResourceName, pools.M, ""),
			to(v.ResourceName+".shared", pools.M/10, ""),
			to(v.ResourceName+".sliced.units", 1, v.ResourceName+".sliced"),
			to(v.ResourceName+".partitioned.units", 1, ""))
		for _, input := range []string{".sliced", ".sliced.cores-percentage", ".sliced.memory-percentage", ".sliced.memory-mib", ".partitioned"} {
			out = append(out, configapi.ResourceTransformation{Input: corev1.ResourceName(v.ResourceName + input), Strategy: &replace})
		}
	}
	return out
}

// DeviceClassMappings returns, for every vendor, how Kueue charges a ResourceClaim of its DeviceClass
// (vendors.DRADeviceClass): in the vendor's credits, by the counter each card's device consumes from its own
// counter set (vendors.DRACreditsCounter, M a card), so a claim of one card costs what the device plugin's
// whole card costs and both ways share one quota. A counter source rather than a plain count, because Kueue
// counts a mapping without sources one a device, not M.
func DeviceClassMappings() []configapi.DeviceClassMapping {
	var out []configapi.DeviceClassMapping
	for _, v := range vendors.All() {
		driver := vendors.DRADriver(v.Key)
		out = append(out, configapi.DeviceClassMapping{
			Name:             Credits(v.Key),
			DeviceClassNames: []corev1.ResourceName{corev1.ResourceName(vendors.DRADeviceClass(v.Key))},
			Sources: []configapi.DeviceClassSourceConfig{{Counter: &configapi.DeviceClassCounterSource{
				Name: vendors.DRACreditsCounter, Driver: driver,
				DeviceSelector: resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", driver)}},
			}}},
		})
	}
	return out
}

// Required returns the part of a Kueue configuration the operator needs, as YAML (integrations and
// resources), for a configuration file or a chart's values to carry as it is.
func Required() ([]byte, error) {
	out, err := yaml.Marshal(struct {
		Integrations configapi.Integrations `json:"integrations"`
		Resources    configapi.Resources    `json:"resources"`
	}{configapi.Integrations{Frameworks: Frameworks},
		configapi.Resources{ExcludeResourcePrefixes: ExcludeResourcePrefixes, Transformations: Transformations(),
			DeviceClassMappings: DeviceClassMappings()}})
	return out, errors.Wrap(err, "cannot encode the Kueue configuration the operator needs")
}

// Parse reads a Kueue controller configuration (config.kueue.x-k8s.io v1beta1 or v1beta2: the fields checked
// here are spelled alike in both).
func Parse(data []byte) (*configapi.Configuration, error) {
	cfg := &configapi.Configuration{}
	if err := yaml.Unmarshal(data, cfg); err != nil {
		return nil, errors.Wrap(err, "cannot parse the Kueue configuration")
	}
	if cfg.APIVersion != "config.kueue.x-k8s.io/v1beta2" && cfg.APIVersion != "config.kueue.x-k8s.io/v1beta1" {
		return nil, errors.Errorf("the Kueue configuration has apiVersion %q, want config.kueue.x-k8s.io/v1beta2 or v1beta1", cfg.APIVersion)
	}
	return cfg, nil
}

// Check returns what the configuration lacks for the operator's queues to admit, one line each, sorted; none
// when it has everything. Extra integrations, transformations and exclusions are the administrator's and
// left alone.
func Check(cfg *configapi.Configuration) []string {
	var missing []string
	var frameworks []string
	if cfg.Integrations != nil {
		frameworks = cfg.Integrations.Frameworks
	}
	for _, f := range Frameworks {
		if !slices.Contains(frameworks, f) {
			missing = append(missing, fmt.Sprintf("integrations.frameworks lacks %q", f))
		}
	}
	have := map[corev1.ResourceName]configapi.ResourceTransformation{}
	var excluded []string
	if cfg.Resources != nil {
		for _, t := range cfg.Resources.Transformations {
			have[t.Input] = t
		}
		excluded = cfg.Resources.ExcludeResourcePrefixes
	}
	for _, want := range Transformations() {
		got, ok := have[want.Input]
		if !ok {
			missing = append(missing, fmt.Sprintf("resources.transformations lacks %s (%s)", want.Input, describe(want)))
			continue
		}
		if !same(want, got) {
			missing = append(missing, fmt.Sprintf("resources.transformations[%s] is %s, want %s", want.Input, describe(got), describe(want)))
		}
	}
	for _, p := range ExcludeResourcePrefixes {
		if !slices.Contains(excluded, p) {
			missing = append(missing, fmt.Sprintf("resources.excludeResourcePrefixes lacks %q", p))
		}
	}
	sort.Strings(missing)
	return missing
}

// same reports whether a transformation does what want does.
func same(want, got configapi.ResourceTransformation) bool {
	if got.Strategy == nil || *got.Strategy != *want.Strategy || got.MultiplyBy != want.MultiplyBy || len(got.Outputs) != len(want.Outputs) {
		return false
	}
	for name, q := range want.Outputs {
		if g, ok := got.Outputs[name]; !ok || g.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

// describe says what a transformation does: "Replace by 1600000 credits.gpustack.ai/nvidia".
func describe(t configapi.ResourceTransformation) string {
	strategy := "Retain"
	if t.Strategy != nil {
		strategy = string(*t.Strategy)
	}
	if len(t.Outputs) == 0 {
		return strategy + " by nothing"
	}
	var outs []string
	for name, q := range t.Outputs {
		outs = append(outs, q.String()+" "+string(name))
	}
	sort.Strings(outs)
	s := strategy + " by " + strings.Join(outs, " and ")
	if t.MultiplyBy != "" {
		s += " times " + string(t.MultiplyBy)
	}
	return s
}
