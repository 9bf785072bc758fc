package main

import (
	"bytes"
	"context"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
)

// policySwitchDelay is how long the API server is given to load or drop a binding before timing again: its
// admission plugin reads bindings from an informer.
const policySwitchDelay = 5 * time.Second

// policyLatency are dry-run Pod creates timed with the admission policies bound and with their bindings gone,
// and the API server's own account of its policy plugin meanwhile.
type policyLatency struct {
	with, without []time.Duration
	// plugin is the time the API server spent in its ValidatingAdmissionPolicy plugin on creates during the
	// measure (apiserver_admission_controller_admission_duration_seconds): the policies' cost without the time a
	// request waits on a busy machine. Its own per-policy histogram observes only denials, warnings and errors.
	plugin *dto.Histogram
}

// policyPluginMetric is the API server's histogram of each admission plugin's time, and policyPluginLabels the
// series of the policy plugin on creates.
const policyPluginMetric = "apiserver_admission_controller_admission_duration_seconds"

var policyPluginLabels = map[string]string{"name": "ValidatingAdmissionPolicy", "operation": "CREATE"}

// policyPlugin reads the API server's policy plugin's time on creates so far.
func policyPlugin(ctx context.Context, cs kubernetes.Interface) (*dto.Histogram, error) {
	data, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the API server's metrics")
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		return nil, errors.Wrap(err, "cannot parse the API server's metrics")
	}
	return mergedHistogram(families, policyPluginMetric, policyPluginLabels), nil
}

// bindings reads the ValidatingAdmissionPolicyBindings the chart installed (helm marks what it made with the
// release's name), as they are to be made again.
func bindings(ctx context.Context, cs kubernetes.Interface) ([]*admissionv1.ValidatingAdmissionPolicyBinding, error) {
	list, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, errors.Wrap(err, "cannot list the policy bindings")
	}
	var out []*admissionv1.ValidatingAdmissionPolicyBinding
	for i := range list.Items {
		b := list.Items[i].DeepCopy()
		if b.Annotations["meta.helm.sh/release-name"] != localcluster.ChartRelease {
			continue
		}
		b.ObjectMeta = metav1.ObjectMeta{Name: b.Name, Labels: b.Labels, Annotations: b.Annotations}
		out = append(out, b)
	}
	return out, nil
}

// measurePolicies times n dry-run creates of pod with the chart's policy bindings in place and n without, in
// two alternating rounds so that drift in the cluster's load falls on both sides alike. The bindings are back
// in place when it returns.
func measurePolicies(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, n int) (policyLatency, error) {
	var out policyLatency
	bs, err := bindings(ctx, cs)
	if err != nil {
		return out, err
	}
	if len(bs) == 0 {
		return out, errors.New("the chart installed no ValidatingAdmissionPolicyBinding")
	}
	before, err := policyPlugin(ctx, cs)
	if err != nil {
		return out, err
	}
	api := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	bind := func(on bool) error {
		for _, b := range bs {
			var err error
			if on {
				_, err = api.Create(ctx, b.DeepCopy(), metav1.CreateOptions{})
			} else {
				err = api.Delete(ctx, b.Name, metav1.DeleteOptions{})
			}
			if err != nil {
				return errors.Wrapf(err, "cannot switch the binding %s", b.Name)
			}
		}
		time.Sleep(policySwitchDelay)
		return nil
	}
	time1 := func(into *[]time.Duration) error {
		for range n / 2 {
			p := pod.DeepCopy()
			start := time.Now()
			if _, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				return errors.Wrap(err, "cannot create a dry-run Pod")
			}
			*into = append(*into, time.Since(start))
		}
		return nil
	}
	for range 2 {
		if err := time1(&out.with); err != nil {
			return out, err
		}
		if err := bind(false); err != nil {
			return out, err
		}
		err := time1(&out.without)
		if berr := bind(true); berr != nil {
			return out, berr
		}
		if err != nil {
			return out, err
		}
	}
	after, err := policyPlugin(ctx, cs)
	if err != nil {
		return out, err
	}
	out.plugin = histogramDelta(before, after)
	return out, nil
}
