package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
)

// metricsPort is the chart's worker.metrics.port.
const metricsPort = 8080

// workerReplica is the leading replica of the chart's worker: its Pod's address, and its process as this
// machine sees it (the real node's containers are this machine's processes).
type workerReplica struct {
	pod, ip string
	pid     int
}

// url is an address on the replica's Pod.
func (w workerReplica) url(port, path string) string { return "http://" + w.ip + ":" + port + path }

// leadingWorker finds the replica that holds the worker's Lease, and the process of its container.
func leadingWorker(ctx context.Context, cs kubernetes.Interface) (workerReplica, error) {
	lease, err := cs.CoordinationV1().Leases(localcluster.ChartNamespace).Get(ctx, "gpustack-operator-worker", metav1.GetOptions{})
	if err != nil {
		return workerReplica{}, errors.Wrap(err, "cannot get the worker's Lease")
	}
	if lease.Spec.HolderIdentity == nil {
		return workerReplica{}, errors.New("no worker replica leads")
	}
	name, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	pod, err := cs.CoreV1().Pods(localcluster.ChartNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return workerReplica{}, errors.Wrapf(err, "cannot get the leading worker's Pod %s", name)
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name != "worker" {
			continue
		}
		_, id, _ := strings.Cut(s.ContainerID, "://")
		pid, err := containerPID(id)
		if err != nil {
			return workerReplica{}, errors.Wrapf(err, "cannot find the process of Pod %s", name)
		}
		return workerReplica{pod: name, ip: pod.Status.PodIP, pid: pid}, nil
	}
	return workerReplica{}, errors.Errorf("Pod %s runs no worker container yet", name)
}

// containerPID is the lowest process ID in a container's cgroup, its first process: /proc/<pid>/cgroup of each
// of its processes names the container's ID.
func containerPID(id string) (int, error) {
	if id == "" {
		return 0, errors.New("the container has no ID")
	}
	files, err := filepath.Glob("/proc/[0-9]*/cgroup")
	if err != nil {
		return 0, errors.Wrap(err, "cannot list the processes")
	}
	lowest := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(data), id) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if err == nil && (lowest == 0 || pid < lowest) {
			lowest = pid
		}
	}
	if lowest == 0 {
		return 0, errors.Errorf("no process runs in container %s", id)
	}
	return lowest, nil
}
