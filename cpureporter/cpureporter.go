// Package cpureporter is the per-node CPU reporter: it reads the node's /proc/cpuinfo and publishes the node's
// cpu-info NodeFeature, from which NFD labels the Node's CPU identity and, through the worker's
// NodeFeatureRule gpustack-cpu-info, annotates its CPU facts. It runs on every Linux node under an account of
// its own that may write only that NodeFeature.
package cpureporter

import (
	"context"
	"os"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager/nodefeature"
	"github.com/gpustack/gpustack-operator/providers/cpuinfo"
)

// Feature is the NFD feature the cpu-info NodeFeature carries the node's CPU facts in (name, family,
// logical-cores, ...), which the worker's NodeFeatureRule gpustack-cpu-info turns into the Node's
// feature.gpustack.ai/cpu-* annotations.
const Feature = "gpustack.cpu"

// PartOf is the app.kubernetes.io/part-of label of the cpu-info NodeFeatures.
const PartOf = "gpustack-operator-cpu-info"

// Spec is the spec of a node's cpu-info NodeFeature: the CPU's facts as the attributes of Feature, and as
// labels the identity NFD's cpu-model labels carry, read from the same /proc/cpuinfo (on
// real hardware the values NFD reads from cpuid, and one source for the labels and annotations), and
// acceleratable=false, which the device manager's NodeFeature overrides on a node with accelerators.
func Spec(cpu cpuinfo.CPU) nfdv1alpha1.NodeFeatureSpec {
	labels := map[string]string{workerv1.LabelAcceleratable: "false"}
	for k, v := range map[string]string{workerv1.LabelCPUVendor: cpu.Vendor, workerv1.LabelCPUFamily: cpu.Family, workerv1.LabelCPUModelID: cpu.Model} {
		if v != "" && len(validation.IsValidLabelValue(v)) == 0 {
			labels[k] = v
		}
	}
	features := nfdv1alpha1.NewFeatures()
	features.Attributes[Feature] = nfdv1alpha1.NewAttributeFeatures(cpu.Attributes())
	return nfdv1alpha1.NodeFeatureSpec{Features: *features, Labels: labels}
}

// +kubebuilder:rbac:groups=nfd.k8s-sigs.io,namespace=gpustack-system,resources=nodefeatures,verbs=get;create;update;patch

// Run publishes node's CPU as read from the cpuinfo file, then again every interval until ctx ends (a
// node's processor changes only across a reboot, which restarts the reporter; the interval mends a
// NodeFeature someone deleted). A failed round is logged and retried at the next.
func Run(ctx context.Context, c client.Client, node, file string, interval time.Duration, log logr.Logger) error {
	for {
		if err := report(ctx, c, node, file); err != nil {
			log.Error(err, "cannot report the node's CPU", "node", node)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

func report(ctx context.Context, c client.Client, node, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return errors.Wrap(err, "cannot read cpuinfo")
	}
	cpu, err := cpuinfo.Parse(data)
	if err != nil {
		return errors.Wrapf(err, "cannot parse %s", file)
	}
	return nodefeature.Apply(ctx, c, workerv1.NodeFeatureName(node, workerv1.NodeFeatureCPUInfo), node, PartOf, Spec(cpu))
}
