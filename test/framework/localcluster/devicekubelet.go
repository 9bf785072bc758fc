package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
	// reported is the capacity last written to each Node.
	reported map[string]map[string]int64
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
	k := &deviceKubelets{cs: cs, nodes: map[string]*deviceplugintest.Kubelet{}, admitted: map[types.UID][]deviceplugintest.Grant{},
		reported: map[string]map[string]int64{}}
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

// run reports the plugins' devices in the Nodes' capacity and admits the Pods bound to the nodes, looking every
// 200 ms (a handful of Pods in the suites that use it).
func (k *deviceKubelets) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		for name, node := range k.nodes {
			k.report(ctx, name, node.Capacity())
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

// report writes the device plugins' resources into the Node's capacity and allocatable when they changed, as
// the kubelet does; the other resources are left to their writers.
func (k *deviceKubelets) report(ctx context.Context, node string, capacity map[string]int64) {
	if len(capacity) == 0 || maps.Equal(capacity, k.reported[node]) {
		return
	}
	list := corev1.ResourceList{}
	for name, n := range capacity {
		list[corev1.ResourceName(name)] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"capacity": list, "allocatable": list}})
	if _, err := k.cs.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return
	}
	k.reported[node] = capacity
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
