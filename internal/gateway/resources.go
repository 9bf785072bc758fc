package gateway

import (
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
)

// served is one object as the API serves it: its metadata, the object itself (with its kind set) and its row's
// cells for kubectl.
type served struct {
	meta   metav1.ObjectMeta
	object any
	cells  []any
}

// apiResource is one resource of the gateway's API: how it is named and listed, and how its objects are made.
type apiResource struct {
	name, singular, kind string
	shortNames           []string
	namespaced           bool
	columns              []metav1.TableColumnDefinition
	objects              func([]MemberState) []served
}

// resources are the gateway's API, read-only: get, list and watch.
var resources = []apiResource{
	{name: "aggregatedinstancetypes", singular: "aggregatedinstancetype", kind: "AggregatedInstanceType", shortNames: []string{"ait"},
		columns: columns("Name", "Clusters", "Accelerator(EX/SH/SL/PT)", "CPU", "Tiers", "Inactive"), objects: aggregatedObjects},
	{name: "clusterinstancetypes", singular: "clusterinstancetype", kind: "ClusterInstanceType", shortNames: []string{"cit"},
		columns: columns("Name", "Cluster", "Accelerator(EX/SH/SL/PT)", "CPU", "Phase"), objects: clusterTypeObjects},
	{name: "clusterinstances", singular: "clusterinstance", kind: "ClusterInstance", namespaced: true,
		columns: columns("Name", "Cluster", "Type", "Phase", "Node"), objects: clusterInstanceObjects},
	{name: "clusterinstancepersistentvolumes", singular: "clusterinstancepersistentvolume", kind: "ClusterInstancePersistentVolume", namespaced: true,
		columns: columns("Name", "Cluster", "Capacity", "Phase", "Volume"), objects: clusterVolumeObjects},
	{name: "clustermembers", singular: "clustermember", kind: "ClusterMember",
		columns: columns("Name", "Reachable", "InstanceTypes", "Message"), objects: memberObjects},
}

// columns names a table's columns; the first is the object's name.
func columns(names ...string) []metav1.TableColumnDefinition {
	out := make([]metav1.TableColumnDefinition, len(names))
	for i, n := range names {
		out[i] = metav1.TableColumnDefinition{Name: n, Type: "string"}
		if i == 0 {
			out[i].Format = "name"
		}
	}
	return out
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: gatewayv1.GroupVersion.String(), Kind: kind}
}

func aggregatedObjects(states []MemberState) []served {
	var out []served
	for _, a := range AggregatedInstanceTypes(states) {
		a.TypeMeta = typeMeta("AggregatedInstanceType")
		active := len(a.Status.Clusters) - len(a.Status.Inactive)
		out = append(out, served{meta: a.ObjectMeta, object: a, cells: []any{a.Name,
			fmt.Sprintf("%d/%d", active, len(a.Status.Clusters)), a.Status.Summary.Accelerator, a.Status.Summary.CPU,
			strconv.Itoa(len(a.Status.Tiers)), strings.Join(a.Status.Inactive, ",")}})
	}
	return out
}

func clusterTypeObjects(states []MemberState) []served {
	var out []served
	for _, t := range ClusterInstanceTypes(states) {
		t.TypeMeta = typeMeta("ClusterInstanceType")
		out = append(out, served{meta: t.ObjectMeta, object: t, cells: []any{t.Name, t.Cluster, t.Status.Summary.Accelerator,
			t.Status.Summary.CPU, string(t.Status.Phase)}})
	}
	return out
}

func clusterInstanceObjects(states []MemberState) []served {
	var out []served
	for _, inst := range ClusterInstances(states) {
		inst.TypeMeta = typeMeta("ClusterInstance")
		out = append(out, served{meta: inst.ObjectMeta, object: inst, cells: []any{inst.Name, inst.Cluster, inst.Spec.Type,
			string(inst.Status.Phase), inst.Status.NodeName}})
	}
	return out
}

func clusterVolumeObjects(states []MemberState) []served {
	var out []served
	for _, v := range ClusterInstancePersistentVolumes(states) {
		v.TypeMeta = typeMeta("ClusterInstancePersistentVolume")
		out = append(out, served{meta: v.ObjectMeta, object: v, cells: []any{v.Name, v.Cluster, v.Spec.Capacity.String(),
			v.Status.Phase, v.Status.Volume}})
	}
	return out
}

func memberObjects(states []MemberState) []served {
	var out []served
	for _, m := range Members(states) {
		m.TypeMeta = typeMeta("ClusterMember")
		out = append(out, served{meta: m.ObjectMeta, object: m, cells: []any{m.Name, strconv.FormatBool(m.Status.Reachable),
			strconv.Itoa(m.Status.InstanceTypes), m.Status.Message}})
	}
	return out
}
