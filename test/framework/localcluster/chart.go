package localcluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpustack/gpustack-operator/test/framework/realnode"
)

// Where the chart installs: its release, and the namespaces whose Pods the PodRunner runs.
const (
	ChartRelease   = "gpustack-operator"
	ChartNamespace = "gpustack-system"
	nfdNamespace   = "node-feature-discovery"
)

// chartImages maps the images of the chart's Pods that run here to the binaries built here: the operator's
// worker, Kueue, and nfd-master. nfd-worker and nfd-gc stay KWOK's: the nodes' CPU identity nfd-worker would
// read is the simulated hardware's, which the local cluster puts on the Nodes, as it runs the device agents.
func (c *Cluster) chartImages() map[string]string {
	return map[string]string{
		"docker.io/gpustack/gpustack-operator":                  c.cfg.Operator,
		"registry.k8s.io/kueue/kueue":                           c.bin("kueue"),
		"registry.k8s.io/nfd/node-feature-discovery nfd-master": c.bin("nfd-master"),
	}
}

// chartValues are the values the local cluster installs the chart with, before Config.ChartValues: the Pods
// share this machine's network, so the worker's ports are set apart from Kueue's (9443, 8081, 8443, 8082) and
// nfd-master's from the worker's metrics; one worker replica, as two would meet on theirs; and no CPU request
// for Kueue, whose half core would otherwise come off the walkthrough's CPU pool (a cluster runs its system
// elsewhere).
func (c *Cluster) chartValues() []string {
	return []string{
		"worker.replicas=1",
		"worker.webhook.port=" + strconv.Itoa(c.ports.workerWebhook),
		"worker.healthPort=" + strconv.Itoa(c.ports.worker),
		"worker.metrics.port=" + strconv.Itoa(c.ports.workerMetrics),
		"nfd.master.port=" + strconv.Itoa(c.ports.nfd),
		"kueue.controllerManager.manager.resources.requests.cpu=0",
	}
}

// realNodeChartValues are the values the chart is installed with on real nodes, where its defaults run but
// for three: storage is turned on, as the default class, since this cluster has none of its own; Kueue asks
// no CPU, since here it runs on the walkthrough's own nodes, whose pools would lose its half core (a cluster
// runs its system elsewhere); and the agents copy the stand-in enforcers every node holds.
var realNodeChartValues = []string{"storage.enabled=true", "storage.storageClass.default=true",
	"kueue.controllerManager.manager.resources.requests.cpu=0",
	"worker.deviceManager.enforcers.image=" + realnode.EnforcerImage}

// installChart installs Config.Chart with helm, as a user does, once the nodes are up: the PodRunner
// (Config.PodRunner run-pods, a component like the others) runs its Pods, and the simulated device agents
// stand in for the DaemonSets' Pods once the worker is up.
func (c *Cluster) installChart(ctx context.Context) error {
	if c.cfg.Chart == "" {
		return nil
	}
	values := c.cfg.ChartValues
	if !c.cfg.RealNodes {
		args := []string{c.cfg.PodRunner, "run-pods", "--kubeconfig=" + c.Kubeconfig, "--dir=" + c.path("pods"),
			"--namespaces=" + ChartNamespace + "," + nfdNamespace}
		for image, binary := range c.chartImages() {
			args = append(args, "--image="+image+"="+binary)
		}
		if err := c.start(componentPods, nil, args...); err != nil {
			return err
		}
		values = append(c.chartValues(), values...)
	} else {
		values = append(realNodeChartValues, values...)
	}
	helm := []string{"install", ChartRelease, c.cfg.Chart, "--namespace", ChartNamespace, "--create-namespace",
		"--wait", "--timeout", "5m"}
	for _, v := range values {
		helm = append(helm, "--set", v)
	}
	cmd := exec.CommandContext(ctx, c.bin("helm"), helm...)
	home := c.path("helm")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "HELM_CACHE_HOME="+home+"/cache",
		"HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	if out, err := cmd.CombinedOutput(); err != nil {
		return errors.Wrapf(err, "helm install %s: %s", c.cfg.Chart, out)
	}
	if err := c.waitFor(ctx, "the worker", 3*time.Minute, func(ctx context.Context) error {
		return c.workerLeads(ctx)
	}); err != nil {
		return err
	}
	if c.cfg.RealNodes {
		return nil // the chart's own agent DaemonSets run on the nodes
	}
	return c.StartAgents(ctx)
}

// workerLeads reports whether a worker holds its Lease, that is, runs.
func (c *Cluster) workerLeads(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	lease, err := cs.CoordinationV1().Leases(ChartNamespace).Get(ctx, "gpustack-operator-worker", metav1.GetOptions{})
	if err != nil {
		return errors.Wrap(err, "cannot get the worker's Lease")
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return errors.New("no worker leads yet")
	}
	return nil
}

// chartConfig checks Config for the chart mode and sets what it implies: the chart brings Kueue and
// nfd-master and the operator, and its Pods need the Pod network (real nodes bring theirs).
func chartConfig(cfg *Config) error {
	if cfg.Chart == "" {
		return nil
	}
	if cfg.PodRunner == "" {
		return errors.New("installing the chart needs Config.PodRunner (the localcluster command, for run-pods or run-node)")
	}
	if !cfg.RealNodes && cfg.Operator == "" {
		return errors.New("installing the chart without real nodes needs Config.Operator, the binary the PodRunner runs for its image")
	}
	if cfg.RealNodes && len(cfg.Images) == 0 {
		return errors.New("installing the chart on real nodes needs Config.Images, the operator's image archive (make package)")
	}
	if _, err := os.Stat(filepath.Join(cfg.Chart, "charts", "kueue")); err != nil {
		return errors.Errorf("%s has no charts/kueue: run `make chart` first", cfg.Chart)
	}
	cfg.NoKueue, cfg.NoKueueCRDs, cfg.NoNFD, cfg.NoWorker = true, true, true, true
	// Real nodes have a Pod network of their own.
	cfg.PodNetwork = !cfg.RealNodes
	cfg.PolicyPaths = nil // the chart installs them
	return nil
}
