package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/gpustack/gpustack-operator/deviceagent/deviceplugin/deviceplugintest"
)

// ConditionDevicesAllocated is the Pod condition the stand-in kubelets set once they allocated a Pod's devices
// through its node's device plugins. With Config.DevicePlugins, KWOK starts a Pod's containers only after it,
// as a real kubelet starts none before its device manager admitted the Pod.
const ConditionDevicesAllocated = "localcluster.gpustack.ai/DevicesAllocated"

// devicePluginDir is where each node's device plugins and its kubelet's socket live: short, as a unix socket
// path has at most 108 bytes.
func (c *Cluster) devicePluginDir(node string) string { return c.path("dp", node) }

// deviceKubelets are the device managers of the nodes' stand-in kubelets: one registration service per node,
// and a loop that admits each Pod bound to a node by allocating its devices, or rejects it as the kubelet
// does (phase Failed, reason UnexpectedAdmissionError) when a plugin refuses.
type deviceKubelets struct {
	cs    kubernetes.Interface
	nodes map[string]*deviceplugintest.Kubelet

	mu sync.Mutex
	// admitted holds each Pod the loop decided on, by UID, with what it was granted.
	admitted map[types.UID][]deviceplugintest.Grant
}

// startDeviceKubelets listens for every inventory node's device plugins and admits Pods until Stop.
func (c *Cluster) startDeviceKubelets(ctx context.Context) error {
	if !c.cfg.DevicePlugins {
		return nil
	}
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	k := &deviceKubelets{cs: cs, nodes: map[string]*deviceplugintest.Kubelet{}, admitted: map[types.UID][]deviceplugintest.Grant{}}
	stop := func() {
		for _, n := range k.nodes {
			n.Stop()
		}
	}
	for _, n := range c.cfg.Inventory.Nodes {
		dir := c.devicePluginDir(n.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			stop()
			return errors.Wrap(err, "cannot create a device-plugin directory")
		}
		if k.nodes[n.Name], err = deviceplugintest.StartKubelet(dir); err != nil {
			stop()
			return errors.Wrapf(err, "cannot start the device manager of node %s", n.Name)
		}
	}
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		k.run(loopCtx)
	}()
	c.devices = k
	c.stopDevices = func() {
		cancel()
		<-done
		stop()
	}
	return nil
}

// run admits the Pods bound to the nodes, looking every 200 ms (a handful of Pods in the suites that use it).
func (k *deviceKubelets) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		pods, err := k.cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		live := map[types.UID]bool{}
		for i := range pods.Items {
			p := &pods.Items[i]
			node := k.nodes[p.Spec.NodeName]
			if node == nil || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			live[p.UID] = true
			if k.decided(p.UID) {
				continue
			}
			k.admit(ctx, node, p)
		}
		k.release(live)
	}
}

func (k *deviceKubelets) decided(uid types.UID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.admitted[uid]
	return ok
}

// admit allocates the Pod's devices and tells KWOK to start it, or fails it with the kubelet's reason.
func (k *deviceKubelets) admit(ctx context.Context, node *deviceplugintest.Kubelet, p *corev1.Pod) {
	grants, err := node.Admit(ctx, p)
	now := metav1.Now()
	status := map[string]any{"conditions": []corev1.PodCondition{{Type: ConditionDevicesAllocated, Status: corev1.ConditionTrue, LastTransitionTime: now}}}
	if err != nil {
		status = map[string]any{"phase": corev1.PodFailed, "reason": "UnexpectedAdmissionError",
			"message": fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)}
	}
	patch, _ := json.Marshal(map[string]any{"status": status})
	if _, perr := k.cs.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); perr != nil {
		// Decided next round again; what was allocated is given back first.
		node.Release(string(p.UID))
		return
	}
	if grants == nil {
		grants = []deviceplugintest.Grant{}
	}
	k.mu.Lock()
	k.admitted[p.UID] = grants
	k.mu.Unlock()
}

// release gives back the devices of Pods that are gone or ended.
func (k *deviceKubelets) release(live map[types.UID]bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for uid := range k.admitted {
		if live[uid] {
			continue
		}
		delete(k.admitted, uid)
		for _, n := range k.nodes {
			n.Release(string(uid))
		}
	}
}

// DeviceGrants returns what the node's device plugins granted the Pod's containers, and whether its stand-in
// kubelet admitted it yet; always false unless Config.DevicePlugins. A Pod it rejected has no grants.
func (c *Cluster) DeviceGrants(uid types.UID) ([]deviceplugintest.Grant, bool) {
	if c.devices == nil {
		return nil, false
	}
	c.devices.mu.Lock()
	defer c.devices.mu.Unlock()
	g, ok := c.devices.admitted[uid]
	return g, ok
}
