package cpuinfo

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

func TestRules(t *testing.T) {
	rule := func(fact, value string) nfdv1alpha1.Rule {
		return nfdv1alpha1.Rule{
			Name:        "cpu-" + fact + "=" + value,
			Annotations: map[string]string{workerv1.AnnotationCPUPrefix + fact: value},
			MatchFeatures: nfdv1alpha1.FeatureMatcher{{Feature: "gpustack.cpu", MatchExpressions: &nfdv1alpha1.MatchExpressionSet{
				fact: &nfdv1alpha1.MatchExpression{Op: nfdv1alpha1.MatchIn, Value: nfdv1alpha1.MatchValue{value}},
			}}},
		}
	}
	cases := map[string]struct {
		reason   string
		reported []map[string]string
		want     nfdv1alpha1.NodeFeatureRuleSpec
	}{
		"None": {
			reason: "No node has reported: a rule of no rules (NFD removes what it annotated before).",
			want:   nfdv1alpha1.NodeFeatureRuleSpec{Rules: []nfdv1alpha1.Rule{}},
		},
		"SharedValues": {
			reason: "Nodes of one model share its rules; each fact and value is one rule, sorted by fact, then value.",
			reported: []map[string]string{
				{"name": "AMD EPYC 7R13 Processor", "logical-cores": "16"},
				{"name": "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz", "logical-cores": "4"},
				{"name": "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz", "logical-cores": "48"},
			},
			want: nfdv1alpha1.NodeFeatureRuleSpec{Rules: []nfdv1alpha1.Rule{
				rule("logical-cores", "16"), rule("logical-cores", "4"), rule("logical-cores", "48"),
				rule("name", "AMD EPYC 7R13 Processor"), rule("name", "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz"),
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Rules(tc.reported)); diff != "" {
				t.Errorf("%s\nRules(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
