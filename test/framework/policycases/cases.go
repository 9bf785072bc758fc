// Package policycases reads the one table of admission cases (policies/testdata/cases.yaml) that both policy
// engines and the API server are tested against.
package policycases

import (
	"os"
	"regexp"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gpustack/gpustack-operator/vendors"
)

// Case is one admission request and the messages it must be denied with; none means allowed.
type Case struct {
	// Name names the case; a per-vendor case's name ends in /<base>.
	Name string `json:"name"`
	// Kind is Pod (the default) or Instance.
	Kind string `json:"kind,omitempty"`
	// Vendors "all" runs the case once per vendor, with {base} replaced by the vendor's resource.
	Vendors string `json:"vendors,omitempty"`
	// Namespace is the request's namespace; default when empty.
	Namespace string `json:"namespace,omitempty"`
	// User is the requesting user; alice when empty.
	User string `json:"user,omitempty"`
	// Unlabelled leaves a Pod without the kueue.x-k8s.io/queue-name label.
	Unlabelled bool `json:"unlabelled,omitempty"`
	// Settings are the settings in effect, by name; others have their defaults.
	Settings map[string]string `json:"settings,omitempty"`
	// Spec is the object's spec.
	Spec map[string]any `json:"spec"`
	// OldSpec, when set, makes the request an update from an object with this spec.
	OldSpec map[string]any `json:"oldSpec,omitempty"`
	// Want are the denial messages.
	Want []string `json:"want,omitempty"`
	// Base is the vendor resource a per-vendor case runs for.
	Base string `json:"-"`
}

// Load reads the table, expanding the per-vendor cases, and refuses duplicate names.
func Load(path string) ([]Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw []Case
	if err := yaml.UnmarshalStrict(data, &raw); err != nil {
		return nil, errors.Wrapf(err, "%s", path)
	}
	var out []Case
	seen := map[string]bool{}
	for _, c := range raw {
		if c.Kind == "" {
			c.Kind = "Pod"
		}
		variants := []Case{c}
		if c.Vendors == "all" {
			variants = nil
			for _, v := range vendors.All() {
				expanded, err := substitute(c, "{base}", v.ResourceName)
				if err != nil {
					return nil, err
				}
				expanded.Name, expanded.Base = c.Name+"/"+v.ResourceName, v.ResourceName
				variants = append(variants, expanded)
			}
		}
		for _, v := range variants {
			if seen[v.Name] {
				return nil, errors.Errorf("%s: case %q is listed twice", path, v.Name)
			}
			seen[v.Name] = true
			out = append(out, v)
		}
	}
	return out, nil
}

// substitute replaces a placeholder everywhere in a case.
func substitute(c Case, from, to string) (Case, error) {
	data, err := yaml.Marshal(c)
	if err != nil {
		return c, err
	}
	out := Case{}
	err = yaml.Unmarshal([]byte(strings.ReplaceAll(string(data), from, to)), &out)
	return out, err
}

// NamespaceOrDefault returns the request's namespace.
func (c Case) NamespaceOrDefault() string {
	if c.Namespace != "" {
		return c.Namespace
	}
	return "default"
}

// UserOrDefault returns the requesting user.
func (c Case) UserOrDefault() string {
	if c.User != "" {
		return c.User
	}
	return "alice"
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// Objects returns the request's object and, for an update, its old object, each a fresh copy.
func (c Case) Objects() (*unstructured.Unstructured, *unstructured.Unstructured) {
	obj := c.object(c.Spec)
	if c.OldSpec == nil {
		return obj, nil
	}
	return obj, c.object(c.OldSpec)
}

func (c Case) object(spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": copyOf(spec)}}
	u.SetAPIVersion("v1")
	u.SetKind(c.Kind)
	if c.Kind == "Instance" {
		u.SetAPIVersion("worker.gpustack.ai/v1")
	}
	u.SetName(strings.Trim(nonName.ReplaceAllString(strings.ToLower(c.Name), "-"), "-"))
	u.SetNamespace(c.NamespaceOrDefault())
	if c.Kind == "Pod" && !c.Unlabelled {
		u.SetLabels(map[string]string{"kueue.x-k8s.io/queue-name": "gpustack-fnv64-c4680bb149644f1c"})
	}
	return u
}

// copyOf deep-copies a YAML-shaped map.
func copyOf(m map[string]any) map[string]any {
	out := map[string]any{}
	data, err := yaml.Marshal(m)
	if err == nil {
		_ = yaml.Unmarshal(data, &out)
	}
	return out
}
