// Package localcluster runs a real Kubernetes control plane from binaries built out of the Go module proxy
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) with real nodes (realnode: a kubelet with
// containerd each) and, where numbers of nodes matter, KWOK's simulated ones; helm installs the operator's
// chart on it. Tests start one per suite; `make demo` starts one in the background and `make demo-down` stops
// it.
package localcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpustack/gpustack-operator/providers/simulated"
	freeports "github.com/gpustack/gpustack-operator/test/framework/ports"
)

// Components in start order; they are stopped in reverse.
const (
	componentEtcd      = "etcd"
	componentAPIServer = "kube-apiserver"
	componentKCM       = "kube-controller-manager"
	componentScheduler = "kube-scheduler"
	componentKWOK      = "kwok"
	componentAgents    = "gpustack-device-manager"
)

var startOrder = []string{componentEtcd, componentAPIServer, componentKCM, componentScheduler, componentKWOK, componentAgents}

// Config says what to start and where.
type Config struct {
	// BinDir holds the binaries and bin/assets that `make tools` builds.
	BinDir string
	// Dir is the run directory: certificates, etcd data, logs, process IDs and the kubeconfig.
	Dir string
	// Inventory lists the nodes to create, real nodes with RealNodes and KWOK's otherwise; nil creates none.
	Inventory *simulated.Inventory
	// KWOKNodes are more nodes, played by KWOK beside the real ones, where numbers of nodes matter (the scale
	// harness). NFD cannot read their hardware, so each carries the labels nfd-worker would write, and the
	// chart's system Pods are kept off them; KWOKAgent reports their cards.
	KWOKNodes *simulated.Inventory
	// KWOKAgent is the gpustack-operator binary whose `device-manager --simulate-inventory` stands in for the
	// device managers of KWOKNodes, as their DaemonSet's account, with a token bound to each node.
	KWOKAgent string
	// Detach lets the components outlive this process (make demo).
	Detach bool
	// Chart, when set, is the operator's chart directory (its charts/ filled by make chart), which the cluster
	// installs with helm on its real nodes, as a user would, into ChartNamespace with ChartValues after those of
	// real nodes (realNodeChartValues): the chart brings Kueue, NFD, the operator and its device managers.
	Chart string
	// ChartValues are helm --set values for Chart.
	ChartValues []string
	// NodeCommand is the localcluster command (hack/localcluster), whose run-node supervises a real node.
	NodeCommand string
	// Settings are the administrator's settings (name: value), written to the gpustack-settings Secret before
	// the chart installs, so the worker starts with them.
	Settings map[string]string
	// AuditUsers, when set, makes the API server record every write by these users (create, update, patch,
	// delete) in the audit log at AuditLogPath, for a measure of the writes a component causes.
	AuditUsers []string
	// RealNodes runs the inventory's nodes as real nodes (realnode: a kubelet, containerd and runc in a network
	// namespace of their own, Pods in real containers) instead of KWOK's; it needs root, `make host-packages`
	// and NodeCommand.
	RealNodes bool
	// FirstNodeIndex is the index of the first real node on the machine's bridge (realnode's addresses): clusters
	// that run side by side (make demo-multi) each take their own range. 1 when zero.
	FirstNodeIndex int
	// Images are image archives every real node imports besides bin/images (the operator's, from make
	// package): a real node pulls nothing.
	Images []string
	// Progress receives one line per step; nil discards them.
	Progress io.Writer
}

// Cluster is a running local cluster.
type Cluster struct {
	cfg   Config
	procs []*process
	ports ports
	// commands are the command lines components were started with, by component, so the fault suite can
	// restart one it killed.
	commands map[string]command

	// Kubeconfig is the path of the administrator's kubeconfig.
	Kubeconfig string
	// RESTConfig is the administrator's client configuration.
	RESTConfig *rest.Config
}

type ports struct {
	etcdClient, etcdPeer, apiServer, kcm, scheduler, kwok, agentMetrics int
}

// Start brings the cluster up and waits until every component is ready and every inventory node is Ready.
// On failure it stops whatever it started.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if err := chartConfig(cfg); err != nil {
		return nil, err
	}
	if err := checkBinaries(cfg); err != nil {
		return nil, err
	}
	if err := checkRealNodes(cfg); err != nil {
		return nil, err
	}
	if cfg.KWOKAgent != "" && (cfg.KWOKNodes == nil || cfg.Chart == "") {
		return nil, errors.New("a simulated agent (Config.KWOKAgent) reports KWOKNodes to the chart's worker: it needs both")
	}
	if _, err := os.Stat(filepath.Join(cfg.Dir, "pids")); err == nil {
		if running, _ := filepath.Glob(filepath.Join(cfg.Dir, "pids", "*.pid")); len(running) > 0 {
			return nil, errors.Errorf("a cluster already runs in %s: stop it first (make demo-down)", cfg.Dir)
		}
	}
	// A fresh start every time: old etcd data or certificates would only hide problems.
	for _, sub := range []string{"pki", "etcd", "logs", "pids", "config", "kubeconfig", "helm", "nodes"} {
		if err := os.RemoveAll(filepath.Join(cfg.Dir, sub)); err != nil {
			return nil, errors.Wrap(err, "cannot clean the run directory")
		}
	}
	c := &Cluster{cfg: cfg, Kubeconfig: filepath.Join(cfg.Dir, "kubeconfig")}
	started := false
	defer func() {
		if !started {
			_ = c.Stop()
		}
	}()
	var err error
	if c.ports, err = freePorts(); err != nil {
		return nil, err
	}
	steps := []struct {
		what string
		run  func(context.Context) error
		skip bool
	}{
		{"generating certificates", c.writePKI, false},
		{"starting etcd", c.startEtcd, false},
		{"starting kube-apiserver", c.startAPIServer, false},
		{"starting kube-controller-manager and kube-scheduler", c.startControllers, false},
		{"starting the real nodes", c.startRealNodes, !cfg.RealNodes || cfg.Inventory == nil},
		{"starting kwok and its nodes", c.startKWOK, len(kwokNodes(cfg)) == 0},
		{"installing the chart (helm install)", c.installChart, cfg.Chart == ""},
		{"starting the KWOK nodes' simulated device manager", c.startKWOKAgent, cfg.KWOKAgent == ""},
	}
	for _, s := range steps {
		if s.skip {
			continue
		}
		start := time.Now()
		c.progress("%s", s.what)
		if err := s.run(ctx); err != nil {
			return nil, errors.Wrap(err, s.what)
		}
		c.progress("  done in %s", time.Since(start).Round(100*time.Millisecond))
	}
	started = true
	return c, nil
}

// Stop stops every component this Cluster started, newest first.
func (c *Cluster) Stop() error {
	_, err := Stop(c.cfg.Dir)
	return err
}

// Stop stops a cluster started in dir, by the process IDs it recorded, and its real nodes with what they run.
// It returns the components it stopped.
func Stop(dir string) ([]string, error) {
	order := make([]string, len(startOrder))
	for i, name := range startOrder {
		order[len(startOrder)-1-i] = name
	}
	// Then whatever else was recorded, first.
	pids, _ := filepath.Glob(filepath.Join(dir, "pids", "*.pid"))
	for _, p := range pids {
		name := strings.TrimSuffix(filepath.Base(p), ".pid")
		if !slices.Contains(order, name) {
			order = append([]string{name}, order...)
		}
	}
	stopped, err := stopRecorded(dir, order)
	if err := stopRealNodes(dir); err != nil {
		return stopped, err
	}
	return stopped, err
}

// AuditLogPath is the API server's audit log (JSON lines), written only when Config.AuditUsers is set.
func (c *Cluster) AuditLogPath() string { return c.path("logs", "audit.log") }

// Clientset returns a Kubernetes clientset for the administrator.
func (c *Cluster) Clientset() (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(c.RESTConfig)
}

func (c *Cluster) progress(format string, args ...any) {
	fmt.Fprintf(c.cfg.Progress, ">> "+format+"\n", args...)
}

func (c *Cluster) bin(name string) string { return filepath.Join(c.cfg.BinDir, name) }

func (c *Cluster) path(parts ...string) string {
	return filepath.Join(append([]string{c.cfg.Dir}, parts...)...)
}

func (c *Cluster) start(name string, env []string, argv ...string) error {
	p, err := startProcess(c.cfg.Dir, name, c.cfg.Detach, env, argv...)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	if c.commands == nil {
		c.commands = map[string]command{}
	}
	c.commands[name] = command{env: env, argv: argv}
	return nil
}

// waitFor polls ready until it succeeds, a started component exits, or the timeout passes.
func (c *Cluster) waitFor(ctx context.Context, what string, timeout time.Duration, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = ready(ctx); last == nil {
			return nil
		}
		for _, p := range c.procs {
			if err := p.exited(c.cfg.Dir); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return errors.Wrapf(last, "%s not ready after %s%s", what, timeout, c.restarted())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// restarted describes the supervised components that exited and were started again, each with its log's
// tail: a component that keeps crashing never exits for good, so it is what a wait that timed out has to
// show.
func (c *Cluster) restarted() string {
	var out strings.Builder
	for _, p := range c.procs {
		if n := restarts(c.cfg.Dir, p.name); n > 0 {
			fmt.Fprintf(&out, "\n%s has exited and been started again %d times; its log ends with:\n%s", p.name, n, logTail(c.cfg.Dir, p.name, 20))
		}
	}
	return out.String()
}

func (c *Cluster) writePKI(context.Context) error {
	p, err := newPKI(c.path("pki"), "ca", "gpustack-local-ca")
	if err != nil {
		return err
	}
	if err := c.writeFrontProxy(); err != nil {
		return err
	}
	if err := p.serving("kube-apiserver", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local"); err != nil {
		return err
	}
	clients := map[string][]string{
		"admin":                         {"kubernetes-admin", "system:masters"},
		"kube-controller-manager":       {"system:kube-controller-manager"},
		"kube-scheduler":                {"system:kube-scheduler"},
		"kube-apiserver-kubelet-client": {"kube-apiserver-kubelet-client", "system:masters"},
	}
	server := "https://127.0.0.1:" + strconv.Itoa(c.ports.apiServer)
	for name, subject := range clients {
		if err := p.client(name, subject[0], subject[1:]...); err != nil {
			return err
		}
		if err := p.kubeconfig(c.path("pki", name+".kubeconfig"), name, server); err != nil {
			return err
		}
	}
	if err := c.nodeCredentials(p); err != nil {
		return err
	}
	if err := p.serviceAccountKeys(); err != nil {
		return err
	}
	if err := p.kubeconfig(c.Kubeconfig, "admin", server); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return errors.Wrap(err, "cannot load the admin kubeconfig")
	}
	cfg.QPS, cfg.Burst = 100, 200
	c.RESTConfig = cfg
	return nil
}

// writeFrontProxy writes a CA of the aggregation layer's front proxy, its own as kubeadm makes it, and the
// front proxy's client certificate signed by it: kube-apiserver presents that certificate when it passes a
// request on to an aggregated API (the worker-gateway's), which trusts the CA.
func (c *Cluster) writeFrontProxy() error {
	p, err := newPKI(c.path("pki"), "front-proxy-ca", "gpustack-local-front-proxy-ca")
	if err != nil {
		return err
	}
	return p.client("front-proxy-client", "front-proxy-client")
}

// RotateFrontProxyCA replaces the front proxy's CA and client certificate, as an administrator rotates them:
// kube-apiserver reloads both files while it runs and publishes the new CA in
// kube-system/extension-apiserver-authentication, and aggregated API servers must trust it from then on.
func (c *Cluster) RotateFrontProxyCA() error {
	return c.writeFrontProxy()
}

// checkBinaries fails early, with the command that builds them, when binaries are missing.
func checkBinaries(cfg Config) error {
	need := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}
	if !cfg.RealNodes || cfg.KWOKNodes != nil {
		need = append(need, "kwok")
	}
	if cfg.Chart != "" {
		need = append(need, "helm")
	}
	for _, b := range need {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, b)); err != nil {
			return errors.Errorf("%s is missing from %s: run `make tools` first", b, cfg.BinDir)
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.BinDir, "assets")); err != nil {
		return errors.Errorf("assets are missing from %s: run `make tools` first", cfg.BinDir)
	}
	return nil
}

// freePorts picks ports that are free now (ports.Free), so a test cluster and a demo cluster can run side by
// side.
func freePorts() (ports, error) {
	var p ports
	dsts := []*int{&p.etcdClient, &p.etcdPeer, &p.apiServer, &p.kcm, &p.scheduler, &p.kwok, &p.agentMetrics}
	free, err := freeports.Free(len(dsts))
	if err != nil {
		return p, err
	}
	for i, dst := range dsts {
		*dst = free[i]
	}
	return p, nil
}
