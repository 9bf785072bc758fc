package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"k8s.io/client-go/kubernetes"
)

// The components the fault suite kills and restarts.
const (
	ComponentEtcd      = componentEtcd
	ComponentAPIServer = componentAPIServer
)

// command is a component's command line.
type command struct {
	env  []string
	argv []string
}

// Kill sends SIGKILL to a component's process group, as `kill -9` would, and waits until it has exited.
func (c *Cluster) Kill(name string) error {
	for i, p := range c.procs {
		if p.name != name {
			continue
		}
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			return errors.Errorf("%s did not exit after SIGKILL", name)
		}
		// A killed component is not a failure that waitFor should report.
		c.procs = append(c.procs[:i], c.procs[i+1:]...)
		_ = os.Remove(filepath.Join(c.cfg.Dir, "pids", name+".pid"))
		return nil
	}
	return errors.Errorf("%s is not running", name)
}

// Restart starts a component that Kill stopped again, with its first command line, and waits until it is
// ready: etcd healthy, kube-apiserver ready.
func (c *Cluster) Restart(ctx context.Context, name string) error {
	cmd, ok := c.commands[name]
	if !ok {
		return errors.Errorf("%s was never started", name)
	}
	for _, p := range c.procs {
		if p.name == name {
			return errors.Errorf("%s is still running: Kill it first", name)
		}
	}
	if err := c.start(name, cmd.env, cmd.argv...); err != nil {
		return err
	}
	var ready func(context.Context) error
	switch name {
	case componentEtcd:
		url := "http://127.0.0.1:" + strconv.Itoa(c.ports.etcdClient) + "/health"
		ready = func(ctx context.Context) error { return httpOK(ctx, url) }
	case componentAPIServer:
		cs, err := kubernetes.NewForConfig(c.RESTConfig)
		if err != nil {
			return errors.Wrap(err, "cannot create client")
		}
		ready = func(ctx context.Context) error {
			_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			return err
		}
	default:
		return nil
	}
	return c.waitFor(ctx, name+" after its restart", 2*time.Minute, ready)
}

// Log returns what a component has logged, over all its lives.
func (c *Cluster) Log(name string) (string, error) {
	data, err := os.ReadFile(filepath.Join(c.cfg.Dir, "logs", name+".log"))
	return string(data), errors.Wrapf(err, "cannot read the log of %s", name)
}

// EtcdURL is the address of etcd's client endpoint.
func (c *Cluster) EtcdURL() string { return "http://127.0.0.1:" + strconv.Itoa(c.ports.etcdClient) }

// RestartKubelet restarts a real node's kubelet as a crash would (its supervisor kills it on SIGHUP and starts
// it again), the node's containers running on, and waits until the new kubelet has started.
func (c *Cluster) RestartKubelet(ctx context.Context, node string) error {
	return c.signalNode(ctx, node, syscall.SIGHUP, "its kubelet's restart")
}

// RebootNode power-cycles a real node (its supervisor does on SIGUSR1): every process of it is killed at once,
// containers included, what a machine keeps in memory is lost (mounts, containerd's state, the Pods' network
// namespaces), what it keeps on disk stays, and it boots again. It waits until the new kubelet has started.
func (c *Cluster) RebootNode(ctx context.Context, node string) error {
	return c.signalNode(ctx, node, syscall.SIGUSR1, "its reboot")
}

// signalNode signals a real node's supervisor and waits until the node's kubelet logs a new start.
func (c *Cluster) signalNode(ctx context.Context, node string, sig syscall.Signal, what string) error {
	data, err := os.ReadFile(c.path("pids", nodeComponent(node)+".pid"))
	if err != nil {
		return errors.Wrapf(err, "node %s is not running", node)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return errors.Wrapf(err, "node %s's pid file", node)
	}
	log := c.path("nodes", node, "kubelet.log")
	starts := func() int {
		data, _ := os.ReadFile(log)
		return strings.Count(string(data), kubeletStarted)
	}
	before := starts()
	if err := syscall.Kill(pid, sig); err != nil {
		return errors.Wrapf(err, "cannot signal node %s's supervisor", node)
	}
	return c.waitFor(ctx, "node "+node+"'s kubelet after "+what, time.Minute, func(context.Context) error {
		if starts() > before {
			return nil
		}
		return errors.Errorf("%s logs no new start", log)
	})
}

// kubeletStarted is what the kubelet logs once as it starts.
const kubeletStarted = `"Kubelet version"`
