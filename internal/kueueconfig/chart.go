package kueueconfig

import (
	"regexp"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// ChartConfiguration returns the configuration the operator's chart gives the Kueue it installs, as YAML: Kueue
// chart's own defaults (probes, metrics, webhook port, leader election, concurrency), the namespaces it
// manages, and Required. Kueue never queues the Pods and Jobs of the system namespaces (workerv1.SystemNamespaces), and
// its webhooks skip them too (its chart makes this their namespace selector), so the chart's own Pods are
// created while Kueue's webhook does not answer yet, as at install: a provisioner Pod refused then would wait
// out its ReplicaSet's backoff, minutes past Kueue's start.
func ChartConfiguration() ([]byte, error) {
	required, err := Required()
	if err != nil {
		return nil, err
	}
	return []byte(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8443
webhook:
  port: 9443
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
controller:
  groupKindConcurrency:
    Job.batch: 5
    Pod: 5
    Workload.kueue.x-k8s.io: 5
    LocalQueue.kueue.x-k8s.io: 1
    ClusterQueue.kueue.x-k8s.io: 1
    ResourceFlavor.kueue.x-k8s.io: 1
clientConnection:
  qps: 50
  burst: 100
managedJobsNamespaceSelector:
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values: [` + strings.Join(workerv1.SystemNamespaces(), ", ") + `]
` + string(required)), nil
}

// chartValueKey finds the values.yaml line that holds the Kueue subchart's configuration as a block scalar.
var chartValueKey = regexp.MustCompile(`^( *)controllerManagerConfigYaml: \|-$`)

// SetChartValue returns the chart's values file with the block of controllerManagerConfigYaml replaced by cfg;
// every other line is kept as it is, comments included.
func SetChartValue(values, cfg []byte) ([]byte, error) {
	lines := strings.Split(string(values), "\n")
	for i, line := range lines {
		m := chartValueKey.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		indent := m[1] + "  "
		end := i + 1
		for end < len(lines) && (strings.TrimSpace(lines[end]) == "" || strings.HasPrefix(lines[end], indent)) {
			end++
		}
		for end > i+1 && strings.TrimSpace(lines[end-1]) == "" {
			end-- // blank lines after the block separate it from what follows
		}
		var block []string
		for _, l := range strings.Split(strings.TrimRight(string(cfg), "\n"), "\n") {
			block = append(block, strings.TrimRight(indent+l, " "))
		}
		out := append(append(append([]string{}, lines[:i+1]...), block...), lines[end:]...)
		return []byte(strings.Join(out, "\n")), nil
	}
	return nil, errors.New("no line controllerManagerConfigYaml: |- to write the configuration under")
}
