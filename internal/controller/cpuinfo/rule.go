// Package cpuinfo keeps the NodeFeatureRule gpustack-cpu-info: NFD annotates each Node with its CPU's facts
// (feature.gpustack.ai/cpu-name, cpu-family, cpu-logical-cores, ...) as the node's cpu-info NodeFeature
// reports them. NFD cannot template an annotation's value, so the rule holds one rule per fact and value seen
// in the cluster, each matching the nodes that report that value.
package cpuinfo

import (
	"sort"

	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/cpureporter"
)

// RuleName is the NodeFeatureRule the worker keeps.
const RuleName = "gpustack-cpu-info"

// Rules returns the rules that annotate every node with its reported CPU facts: one rule per fact and
// distinct value, sorted by fact and value, so the same facts always give the same spec.
func Rules(reported []map[string]string) nfdv1alpha1.NodeFeatureRuleSpec {
	values := map[string]map[string]bool{}
	for _, facts := range reported {
		for k, v := range facts {
			if values[k] == nil {
				values[k] = map[string]bool{}
			}
			values[k][v] = true
		}
	}
	spec := nfdv1alpha1.NodeFeatureRuleSpec{Rules: []nfdv1alpha1.Rule{}}
	for _, k := range sortedKeys(values) {
		for _, v := range sortedKeys(values[k]) {
			spec.Rules = append(spec.Rules, nfdv1alpha1.Rule{
				Name:        "cpu-" + k + "=" + v,
				Annotations: map[string]string{workerv1.AnnotationCPUPrefix + k: v},
				MatchFeatures: nfdv1alpha1.FeatureMatcher{{
					Feature: cpureporter.Feature,
					MatchExpressions: &nfdv1alpha1.MatchExpressionSet{
						k: &nfdv1alpha1.MatchExpression{Op: nfdv1alpha1.MatchIn, Value: nfdv1alpha1.MatchValue{v}},
					},
				}},
			})
		}
	}
	return spec
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
