// Package plan is the dry run behind `gpustack-operator plan`: what the chain would create for an inventory
// file, computed by the same composition functions the operator runs, without a cluster.
package plan

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/functions/xrs"
	"github.com/gpustack/gpustack-operator/internal/embedded"
	"github.com/gpustack/gpustack-operator/providers/simulated"
)

// Result is the chain an inventory composes.
type Result struct {
	// Objects are every composed object, InstanceTypes with their status filled in, sorted by kind and name.
	Objects []*unstructured.Unstructured
	// Warnings are the functions' warnings.
	Warnings []string
	// Composites are the composite resources the functions were called with: the XNodeInventory first, then
	// one XInstanceTypePool per InstanceType. Under Crossplane these are what the compositions render.
	Composites []map[string]any
}

// Plan composes the chain of an inventory under the given settings, with entrance queues in the namespaces.
func Plan(ctx context.Context, inv *simulated.Inventory, settings xrs.FunctionSettings, namespaces []string) (*Result, error) {
	nodes, err := simulated.Nodes(ctx, inv)
	if err != nil {
		return nil, err
	}
	inventorySpec := xrs.Inventory(nodes, settings)
	out, status, err := embedded.Flavors(ctx, inventorySpec)
	if err != nil {
		return nil, errors.Wrap(err, "cannot compose flavors")
	}
	r := &Result{Warnings: out.Warnings}
	req, err := embedded.FlavorsRequest(inventorySpec)
	if err != nil {
		return nil, err
	}
	r.Composites = append(r.Composites, req.GetObserved().GetComposite().GetResource().AsMap())
	for _, o := range out.Objects {
		if o.GetKind() != "InstanceType" {
			r.Objects = append(r.Objects, o)
			continue
		}
		it := &workerv1.InstanceType{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, it); err != nil {
			return nil, errors.Wrapf(err, "cannot decode InstanceType %s", o.GetName())
		}
		poolSpec := xrs.InstanceTypePoolSpec{
			Name: it.Name, Labels: it.Labels, Type: it.Spec, Flavors: embedded.PoolFlavors(it.Spec, status.Flavors),
			Nodes:      embedded.PoolNodes(it.Spec, status.Flavors, nodes),
			Namespaces: namespaces, Settings: settings,
		}
		pool, st, err := embedded.InstanceType(ctx, poolSpec)
		if err != nil {
			return nil, errors.Wrapf(err, "cannot compose InstanceType %s", it.Name)
		}
		req, err := embedded.InstanceTypeRequest(poolSpec)
		if err != nil {
			return nil, err
		}
		r.Composites = append(r.Composites, req.GetObserved().GetComposite().GetResource().AsMap())
		r.Warnings = append(r.Warnings, pool.Warnings...)
		r.Objects = append(r.Objects, pool.Objects...)
		it.Status = st
		delete(it.Annotations, workerv1.AnnotationComposePolicy)
		if len(it.Annotations) == 0 {
			it.Annotations = nil
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(it)
		if err != nil {
			return nil, errors.Wrapf(err, "cannot encode InstanceType %s", it.Name)
		}
		r.Objects = append(r.Objects, &unstructured.Unstructured{Object: u})
	}
	sort.SliceStable(r.Objects, func(i, j int) bool {
		a, b := r.Objects[i], r.Objects[j]
		if a.GetKind() != b.GetKind() {
			return a.GetKind() < b.GetKind()
		}
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})
	return r, nil
}

// Of returns the objects of one kind.
func (r *Result) Of(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.Objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// WriteYAML writes the result as one v1 List.
func (r *Result) WriteYAML(w io.Writer) error {
	list := &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	for _, o := range r.Objects {
		list.Items = append(list.Items, runtime.RawExtension{Object: o})
	}
	data, err := yaml.Marshal(list)
	if err != nil {
		return errors.Wrap(err, "cannot encode the list")
	}
	_, err = w.Write(data)
	return err
}

// WriteComposites writes the composite resources as one v1 List, for rendering them under Crossplane.
func (r *Result) WriteComposites(w io.Writer) error {
	items := make([]any, len(r.Composites))
	for i, c := range r.Composites {
		items[i] = c
	}
	data, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return errors.Wrap(err, "cannot encode the composites")
	}
	_, err = w.Write(data)
	return err
}

// WriteTables writes what `kubectl get resourceflavor`, `clusterqueue`, `instancetype` and
// `instancetypeflavor` would print, each under a heading.
func (r *Result) WriteTables(w io.Writer) error {
	sections := []struct {
		title  string
		kind   string
		header []string
		row    func(*unstructured.Unstructured) []string
	}{
		{"resourceflavor", "ResourceFlavor", []string{"NAME"}, func(o *unstructured.Unstructured) []string {
			return []string{o.GetName()}
		}},
		{"clusterqueue", "ClusterQueue", []string{"NAME", "COHORT", "PENDING WORKLOADS"}, func(o *unstructured.Unstructured) []string {
			return []string{o.GetName(), "", "0"}
		}},
		{"instancetype", "InstanceType", InstanceTypeHeader, func(o *unstructured.Unstructured) []string {
			return InstanceTypeRow(o)
		}},
		{"instancetypeflavor", "InstanceTypeFlavor", []string{"NAME", "GENERALGROUP", "ACCELERATORGROUP", "ACCELERATABLE",
			"MANUFACTURER", "PRODUCT", "MEMORY", "CORES", "SLICEABLE"}, func(o *unstructured.Unstructured) []string {
			return []string{o.GetName(), str(o, "spec", "generalGroup"), str(o, "spec", "acceleratorGroup"),
				str(o, "spec", "acceleratable"), str(o, "spec", "manufacturer"), str(o, "spec", "product"),
				str(o, "spec", "memory"), str(o, "spec", "cores"), str(o, "spec", "sliceable")}
		}},
	}
	for i, s := range sections {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "$ kubectl get %s\n", s.title)
		tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
		fmt.Fprintln(tw, strings.Join(s.header, "\t"))
		for _, o := range r.Of(s.kind) {
			fmt.Fprintln(tw, strings.Join(s.row(o), "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// InstanceTypeHeader are the columns of `kubectl get instancetype`.
var InstanceTypeHeader = []string{"NAME", "ENTRANCE", "UNIT(CPU/RAM)/STORAGE", "ACCELERATOR(EX/SH/SL/PT)", "CPU", "PHASE"}

// InstanceTypeRow renders one InstanceType as `kubectl get instancetype` does.
func InstanceTypeRow(o *unstructured.Unstructured) []string {
	return []string{o.GetName(), str(o, "status", "entrance"), str(o, "status", "summary", "unit"),
		str(o, "status", "summary", "accelerator"), str(o, "status", "summary", "cpu"), str(o, "status", "phase")}
}

func str(o *unstructured.Unstructured, path ...string) string {
	v, ok, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
	if !ok || v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// DefaultNamespaces are the namespaces `plan` gives entrance queues when none are named.
var DefaultNamespaces = []string{"default"}
