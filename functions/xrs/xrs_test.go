package xrs_test

import (
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/gpustack/gpustack-operator/functions/xrs"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// TestXRDsCoverTheInputs checks that each composite's schema declares every field of the function input it
// carries: Crossplane prunes a field its XRD does not declare, and the function would then read its zero value.
func TestXRDsCoverTheInputs(t *testing.T) {
	cases := map[string]struct {
		xrd   string
		input any
	}{
		"InstanceTypePool": {xrd: "xrd-instancetypepool.yaml", input: xrs.InstanceTypePoolSpec{}},
		"NodeInventory":    {xrd: "xrd-nodeinventory.yaml", input: xrs.NodeInventorySpec{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(testenv.Path("compositions", tc.xrd))
			if err != nil {
				t.Fatal(err)
			}
			var xrd struct {
				Spec struct {
					Versions []struct {
						Schema struct {
							OpenAPIV3Schema struct {
								Properties struct {
									Spec struct {
										Properties map[string]any `json:"properties"`
									} `json:"spec"`
								} `json:"properties"`
							} `json:"openAPIV3Schema"`
						} `json:"schema"`
					} `json:"versions"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal(data, &xrd); err != nil {
				t.Fatal(err)
			}
			var declared []string
			for p := range xrd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties.Spec.Properties {
				declared = append(declared, p)
			}
			var fields []string
			typ := reflect.TypeOf(tc.input)
			for i := range typ.NumField() {
				if tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
					fields = append(fields, tag)
				}
			}
			sort.Strings(declared)
			sort.Strings(fields)
			if diff := cmp.Diff(fields, declared); diff != "" {
				t.Errorf("%s's spec properties against %T's fields: -fields, +declared:\n%s", tc.xrd, tc.input, diff)
			}
		})
	}
}
