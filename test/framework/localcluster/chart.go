package localcluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	settingsv1 "github.com/gpustack/gpustack-operator/apis/settings/v1"
	"github.com/gpustack/gpustack-operator/internal/settings"
	"github.com/gpustack/gpustack-operator/test/framework/realnode"
)

// Where the chart installs: its release and namespace.
const (
	ChartRelease   = "gpustack-operator"
	ChartNamespace = "gpustack-system"
)

// realNodeChartValues are the values the chart is installed with on real nodes, where its defaults run but
// for three: storage is turned on, as the default class, since this cluster has none of its own; Kueue asks
// no CPU, since here it runs on the walkthrough's own nodes, whose pools would lose its half core (a cluster
// runs its system elsewhere); and the agents copy the stand-in enforcers every node holds.
var realNodeChartValues = []string{"storage.enabled=true", "storage.storageClass.default=true",
	"kueue.controllerManager.manager.resources.requests.cpu=0",
	"worker.deviceManager.enforcers.image=" + realnode.EnforcerImage}

// installChart installs Config.Chart with helm, as a user does, once the nodes are up, and waits until a
// worker leads.
func (c *Cluster) installChart(ctx context.Context) error {
	if err := c.writeSettings(ctx); err != nil {
		return err
	}
	values := append(append(slices.Clone(realNodeChartValues), kwokChartValues(c.cfg)...), c.cfg.ChartValues...)
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
	if err := c.waitFor(ctx, "the worker", 3*time.Minute, c.workerLeads); err != nil {
		return err
	}
	// kube-apiserver finds the worker's settings API available a moment after its Pods are ready.
	return c.waitFor(ctx, "the settings API", 2*time.Minute, c.settingsServed)
}

// settingsServed reports whether kube-apiserver answers settings.gpustack.ai/v1 through the worker, or the
// chart serves no settings API.
func (c *Cluster) settingsServed(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	err = cs.Discovery().RESTClient().Get().AbsPath("/apis/apiregistration.k8s.io/v1/apiservices", settingsv1.APIServiceName).Do(ctx).Error()
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return errors.Wrap(err, "cannot get the settings APIService")
	}
	_, err = cs.Discovery().ServerResourcesForGroupVersion(settingsv1.GroupVersion.String())
	return errors.Wrap(err, "settings.gpustack.ai/v1 is not served yet")
}

// writeSettings writes Config.Settings to the settings Secret, as an administrator seeds them before installing.
func (c *Cluster) writeSettings(ctx context.Context) error {
	if len(c.cfg.Settings) == 0 {
		return nil
	}
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	if err := ensureNamespace(ctx, cs, ChartNamespace); err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ChartNamespace, Name: settings.SecretName},
		StringData: c.cfg.Settings}
	_, err = cs.CoreV1().Secrets(ChartNamespace).Create(ctx, secret, metav1.CreateOptions{})
	return errors.Wrap(err, "cannot create the settings Secret")
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

// chartConfig checks that Config's chart mode has what it needs: real nodes to run the chart's Pods, and the
// operator's image for them.
func chartConfig(cfg Config) error {
	if cfg.Chart == "" {
		return nil
	}
	if !cfg.RealNodes {
		return errors.New("installing the chart needs real nodes (Config.RealNodes), whose containers run its Pods")
	}
	if len(cfg.Images) == 0 {
		return errors.New("installing the chart on real nodes needs Config.Images, the operator's image archive (make package)")
	}
	if _, err := os.Stat(filepath.Join(cfg.Chart, "charts", "kueue")); err != nil {
		return errors.Errorf("%s has no charts/kueue: run `make chart` first", cfg.Chart)
	}
	return nil
}

// labelRealNode marks the real nodes of a cluster that has KWOK nodes too: KWOK only pretends to run Pods, so
// the chart's system Pods are kept to real ones (kwokChartValues). A KWOK node carries type=kwok.
const labelRealNode = "type"

// kwokChartValues keep the chart's system Pods (the worker, Kueue, nfd-master, nfd-gc and nfd-worker) on the
// real nodes when the cluster has KWOK nodes too; the KWOK nodes' labels stand in for nfd-worker's.
func kwokChartValues(cfg Config) []string {
	if cfg.KWOKNodes == nil {
		return nil
	}
	var out []string
	for _, v := range []string{"worker", "kueue.controllerManager", "nfd.master", "nfd.gc", "nfd.worker"} {
		out = append(out, v+".nodeSelector."+labelRealNode+"=real")
	}
	return out
}
