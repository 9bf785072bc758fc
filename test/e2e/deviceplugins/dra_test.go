package deviceplugins

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager/dra"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/test/framework/e2esuite"
	"github.com/gpustack/gpustack-operator/test/framework/realnode"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Every node's device manager registers its vendor's DRA driver with the node's real kubelet (which removes a
// node's slices when it starts, and keeps only a registered driver's) and publishes the node's cards as
// ResourceSlices: each healthy card of each node's ledger is there once, under its vendor's driver, in the node's pool,
// with the card's memory as capacity; and the chart made every vendor's DeviceClass.
var _ = It("lists every node's cards as ResourceSlices of its vendor's DRA driver, and the vendors' DeviceClasses", func(ctx context.Context) {
	// The cards no container holds through the device plugins, as the ledger says now: another spec's Pods may
	// still be letting theirs go.
	free := func() (map[string][]string, error) {
		var devices workerv1.DevicesList
		if err := suite.Client.List(ctx, &devices); err != nil {
			return nil, err
		}
		want := map[string][]string{}
		for _, d := range devices.Items {
			held := pools.LedgerCards(&d)
			for _, g := range d.Spec.Groups {
				for _, a := range g.Accelerators {
					if e := held[a.ID]; a.Status.Unhealthy || e.Mode != workerv1.AllocationNone && len(e.ResourceClaims) == 0 {
						continue
					}
					key := d.Name + " " + dra.DriverName(g.Manufacturer)
					want[key] = append(want[key], fmt.Sprintf("%s %dMi", a.ID, g.Memory))
				}
			}
		}
		for _, cards := range want {
			sort.Strings(cards)
		}
		return want, nil
	}
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
		want, err := free()
		if err != nil {
			return false, err.Error()
		}
		if len(want) == 0 {
			return false, "the ledger has no cards yet"
		}
		var list resourceapi.ResourceSliceList
		if err := suite.Client.List(ctx, &list); err != nil {
			return false, err.Error()
		}
		got := map[string][]string{}
		for _, s := range list.Items {
			if s.Spec.NodeName == nil || s.Spec.Pool.Name != *s.Spec.NodeName {
				return false, fmt.Sprintf("ResourceSlice %s: pool %s, not named after its node", s.Name, s.Spec.Pool.Name)
			}
			key := *s.Spec.NodeName + " " + s.Spec.Driver
			for _, d := range s.Spec.Devices {
				uuid := d.Attributes[dra.AttributeUUID].StringValue
				memory := d.Capacity[dra.CapacityMemory].Value
				if uuid == nil {
					return false, fmt.Sprintf("ResourceSlice %s: device %s has no uuid", s.Name, d.Name)
				}
				got[key] = append(got[key], fmt.Sprintf("%s %dMi", *uuid, memory.Value()>>20))
			}
		}
		for _, cards := range got {
			sort.Strings(cards)
		}
		diff := cmp.Diff(want, got)
		return diff == "", "the ResourceSlices' cards by node and driver, against the ledger's: -want, +got:\n" + diff
	})

	var classes resourceapi.DeviceClassList
	Expect(suite.Client.List(ctx, &classes)).To(Succeed())
	var names, wantNames []string
	for _, c := range classes.Items {
		names = append(names, c.Name)
	}
	for _, v := range vendors.All() {
		wantNames = append(wantNames, "gpustack-"+v.Key)
	}
	Expect(names).To(ContainElements(wantNames))
})

// A Pod asks node-l4-a's one card through a claim of the gpustack-nvidia class: the scheduler allocates the
// card from the node's ResourceSlice, the node's driver prepares it (a CDI spec of what the device plugin would
// give the card), and containerd starts the container with the card visible. While the claim holds the card the
// ledger charges it to the claim and the device plugin lists it unhealthy, so the node offers no nvidia.com/gpu,
// and the per-card check holds back a Job that needs both of the pool's cards; once the Pod is gone, the card is
// free to both again, the claim's CDI spec is removed and the Job runs.
var _ = It("prepares a DRA claim's card for a Pod, and keeps it from the device plugin while the claim holds it", func(ctx context.Context) {
	const node = "node-l4-a"
	create(&resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "one-nvidia"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "card", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpustack-nvidia"}}}}}}})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dra-card"},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{corev1.LabelHostname: node},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("one-nvidia")}},
			Containers: []corev1.Container{{Name: "c", Image: realnode.UserImage, Command: []string{"sleep", "infinity"},
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}}}}
	create(pod)
	pod = running(pod.Name)

	Expect(pod.Status.ResourceClaimStatuses).To(HaveLen(1))
	claim := &resourceapi.ResourceClaim{}
	Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: *pod.Status.ResourceClaimStatuses[0].ResourceClaimName}, claim)).To(Succeed())
	Expect(claim.Status.Allocation).NotTo(BeNil())
	Expect(claim.Status.Allocation.Devices.Results).To(ConsistOf(And(HaveField("Driver", "nvidia.gpustack.ai"),
		HaveField("Pool", node), HaveField("Device", "card-0"))))
	uuid := suite.Kubectl("get", "devices", node, "-o", "jsonpath={.spec.groups[0].accelerators[0].id}")
	Expect(environ(pod.Name, "c")).To(HaveKeyWithValue("NVIDIA_VISIBLE_DEVICES", uuid), "the card the claim's CDI spec names")
	root, err := suite.Cluster.NodeRoot(node)
	Expect(err).NotTo(HaveOccurred())
	spec := filepath.Join(root, "run", "cdi", "nvidia.gpustack.ai-claim_"+string(claim.UID)+".json")
	Expect(spec).To(BeAnExistingFile())

	e2esuite.WaitFor(time.Minute, func() (bool, string) {
		held := suite.Kubectl("get", "devices", node, "-o", "jsonpath={.status.groups[0].accelerators[0].resourceClaims}")
		gpus := suite.Kubectl("get", "node", node, "-o", `jsonpath={.status.allocatable.nvidia\.com/gpu}`)
		return strings.Contains(held, "default/"+claim.Name) && gpus == "0",
			fmt.Sprintf("the ledger's claims on the card: %s; the node's allocatable nvidia.com/gpu: %s", held, gpus)
	})

	// The pool's other card is free, so a Job of two one-card Pods waits at the per-card check, which counts
	// the claim's card as held, and runs on both nodes once the claim's Pod is gone.
	create(pairJob("pair-dra", poolOf(l4).Name))
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
		var wls kueue.WorkloadList
		if err := suite.Client.List(ctx, &wls, client.InNamespace("default")); err != nil {
			return false, err.Error()
		}
		var checks []string
		for _, wl := range wls.Items {
			if len(wl.OwnerReferences) > 0 && wl.OwnerReferences[0].Name == "pair-dra" {
				for _, c := range wl.Status.AdmissionChecks {
					checks = append(checks, c.Message)
				}
			}
		}
		return slices.ContainsFunc(checks, func(m string) bool { return strings.Contains(m, "cannot take") }),
			fmt.Sprintf("the Job's Workload's admission checks say: %q", checks)
	})
	Expect(suite.Kubectl("get", "pods", "-n", "default", "-l", "batch.kubernetes.io/job-name=pair-dra", "-o", "name")).To(BeEmpty(),
		"the Job waits, suspended, while one card is free")

	Expect(suite.Client.Delete(ctx, pod)).To(Succeed())
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
		held := suite.Kubectl("get", "devices", node, "-o", "jsonpath={.status.groups[0].accelerators[0].resourceClaims}")
		gpus := suite.Kubectl("get", "node", node, "-o", `jsonpath={.status.allocatable.nvidia\.com/gpu}`)
		_, err := os.Stat(spec)
		return held == "" && gpus == "1" && os.IsNotExist(err),
			fmt.Sprintf("the ledger's claims on the card: %q; the node's allocatable nvidia.com/gpu: %s; the CDI spec: %v", held, gpus, err)
	})
	pairRunsOnTwoNodes("pair-dra")
})

// The kubelet of a node whose card a prepared claim holds restarts, as after a crash: the Pod runs on, its
// container not restarted; the new kubelet removes the node's ResourceSlices as it starts and the node's driver,
// registered with it again, publishes them again; the ledger and the device plugin keep the card held all along;
// and once the Pod is gone, the new kubelet has the driver unprepare the claim it prepared for the old one: its
// CDI spec removed, the card free to the device plugin again.
var _ = It("keeps a prepared claim's card held across a restart of its node's kubelet, and unprepares it after", func(ctx context.Context) {
	const node = "node-l4-b"
	create(&resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "one-nvidia-restart"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "card", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpustack-nvidia"}}}}}}})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dra-restart"},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{corev1.LabelHostname: node},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("one-nvidia-restart")}},
			Containers: []corev1.Container{{Name: "c", Image: realnode.UserImage, Command: []string{"sleep", "infinity"},
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}}}}
	create(pod)
	pod = running(pod.Name)
	Expect(pod.Status.ResourceClaimStatuses).To(HaveLen(1))
	claim := *pod.Status.ResourceClaimStatuses[0].ResourceClaimName
	rc := &resourceapi.ResourceClaim{}
	Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: claim}, rc)).To(Succeed())
	root, err := suite.Cluster.NodeRoot(node)
	Expect(err).NotTo(HaveOccurred())
	spec := filepath.Join(root, "run", "cdi", "nvidia.gpustack.ai-claim_"+string(rc.UID)+".json")
	// held says whether the ledger charges the card to the claim and the node offers no nvidia.com/gpu.
	held := func() (bool, string) {
		on := suite.Kubectl("get", "devices", node, "-o", "jsonpath={.status.groups[0].accelerators[0].resourceClaims}")
		gpus := suite.Kubectl("get", "node", node, "-o", `jsonpath={.status.allocatable.nvidia\.com/gpu}`)
		return strings.Contains(on, "default/"+claim) && gpus == "0",
			fmt.Sprintf("the ledger's claims on the card: %q; the node's allocatable nvidia.com/gpu: %s", on, gpus)
	}
	e2esuite.WaitFor(time.Minute, held)

	Expect(suite.Cluster.RestartKubelet(ctx, node)).To(Succeed())
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
		devices := suite.Kubectl("get", "resourceslices", "--field-selector", "spec.nodeName="+node+",spec.driver=nvidia.gpustack.ai",
			"-o", "jsonpath={.items[*].spec.devices[*].name}")
		ok, why := held()
		return devices == "card-0" && ok, fmt.Sprintf("the node's nvidia devices published: %q; %s", devices, why)
	})
	pod = running(pod.Name)
	Expect(pod.Status.ContainerStatuses).To(ConsistOf(HaveField("RestartCount", BeZero())), "the Pod's container runs on through the kubelet's restart")
	Expect(spec).To(BeAnExistingFile(), "the claim's CDI spec, prepared for the kubelet before")

	Expect(suite.Client.Delete(ctx, pod)).To(Succeed())
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
		on := suite.Kubectl("get", "devices", node, "-o", "jsonpath={.status.groups[0].accelerators[0].resourceClaims}")
		gpus := suite.Kubectl("get", "node", node, "-o", `jsonpath={.status.allocatable.nvidia\.com/gpu}`)
		_, err := os.Stat(spec)
		return on == "" && gpus == "1" && os.IsNotExist(err),
			fmt.Sprintf("the ledger's claims on the card: %q; the node's allocatable nvidia.com/gpu: %s; the CDI spec: %v", on, gpus, err)
	})
})

// Pods queued at the L4 pool's entrance ask a card each through a claim of the gpustack-nvidia class: Kueue
// charges each claim a whole card's credits (the chart's DeviceClass mapping counts the credits counter each
// card's device consumes), so the pool's two cards of quota admit two of them, which run, and the third waits
// for quota until one of the two is gone.
var _ = It("charges a queued Pod's DRA claim in its pool's credits, as a card of the device plugin", func(ctx context.Context) {
	pool := poolOf(l4)
	create(&resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "one-nvidia-queued"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "card", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpustack-nvidia"}}}}}}})
	claimPod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name,
			Labels: map[string]string{"kueue.x-k8s.io/queue-name": pools.EntranceName(pool.Name)}},
			Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("one-nvidia-queued")}},
				Containers: []corev1.Container{{Name: "c", Image: realnode.UserImage, Command: []string{"sleep", "infinity"},
					Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}},
						Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	}
	credits := corev1.ResourceName("credits.gpustack.ai/nvidia")
	// charged waits until the Pod's Workload is admitted, and returns what it is charged in credits.
	charged := func(pod string) int64 {
		GinkgoHelper()
		var got int64
		e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
			wl, err := workloadOf(ctx, pod)
			if err != nil || wl.Status.Admission == nil {
				return false, fmt.Sprintf("the Workload of Pod %s is not admitted (%v): %s", pod, err, describeWorkload(wl))
			}
			usage := wl.Status.Admission.PodSetAssignments[0].ResourceUsage[credits]
			got = usage.Value()
			return true, ""
		})
		return got
	}
	create(claimPod("queued-claim-a"))
	create(claimPod("queued-claim-b"))
	for _, pod := range []string{"queued-claim-a", "queued-claim-b"} {
		Expect(charged(pod)).To(Equal(pools.M), "Pod %s's claim of one card, in %s", pod, credits)
		running(pod)
	}

	create(claimPod("queued-claim-c"))
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
		wl, err := workloadOf(ctx, "queued-claim-c")
		if err != nil {
			return false, err.Error()
		}
		if wl.Status.Admission != nil {
			StopTrying("Pod queued-claim-c's Workload was admitted beyond the pool's two cards: " + describeWorkload(wl)).Now()
		}
		why, err := pendingReason(ctx, wl)
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(why, "insufficient unused quota for "+string(credits)), "Pod queued-claim-c waits: " + why
	})

	Expect(suite.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "queued-claim-a"}})).To(Succeed())
	Expect(charged("queued-claim-c")).To(Equal(pools.M), "Pod queued-claim-c's claim, once queued-claim-a's card is free")
	running("queued-claim-c")
})

// Pods queued at the L4 pool's entrance ask a card through a claim whose request has a CEL selector: the
// per-card check reads it on the nodes' ResourceSlices as the scheduler's allocator does. A request for
// node-l4-b's card by its UUID is placed and pinned there, though node-l4-a comes first and has its card free
// (placed there by count, the Pod would never bind). A second such request waits at the check while the first
// holds that card: Kueue's quota admits it (one of the pool's two cards is free, and a device in the cluster
// matches the selector, which is all Kueue checks), but the one card it may take is not free. It runs there
// once the first is gone.
var _ = It("places a queued Pod's DRA claim only on a card its selectors match", func(ctx context.Context) {
	pool := poolOf(l4)
	uuid := suite.Kubectl("get", "devices", "node-l4-b", "-o", "jsonpath={.spec.groups[0].accelerators[0].id}")
	Expect(uuid).NotTo(BeEmpty())
	selected := func(name, expression string) {
		create(&resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
				Requests: []resourceapi.DeviceRequest{{Name: "card", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpustack-nvidia",
					Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expression}}}}}}}}}})
		create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name,
			Labels: map[string]string{"kueue.x-k8s.io/queue-name": pools.EntranceName(pool.Name)}},
			Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To(name)}},
				Containers: []corev1.Container{{Name: "c", Image: realnode.UserImage, Command: []string{"sleep", "infinity"},
					Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}},
						Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}})
	}
	// checkSays waits until the per-card check's message on the Pod's Workload holds want.
	checkSays := func(pod, want string) {
		GinkgoHelper()
		e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
			wl, err := workloadOf(ctx, pod)
			if err != nil {
				return false, err.Error()
			}
			var said []string
			for _, c := range wl.Status.AdmissionChecks {
				said = append(said, c.Message)
			}
			return slices.ContainsFunc(said, func(m string) bool { return strings.Contains(m, want) }),
				fmt.Sprintf("Pod %s's Workload's admission checks say %q; %s", pod, said, describeWorkload(wl))
		})
	}

	selected("card-by-uuid", `device.attributes["nvidia.gpustack.ai"].uuid == "`+uuid+`"`)
	checkSays("card-by-uuid", "fits on node node-l4-b")
	Expect(running("card-by-uuid").Spec.NodeName).To(Equal("node-l4-b"))

	selected("card-by-uuid-too", `device.attributes["nvidia.gpustack.ai"].uuid == "`+uuid+`"`)
	checkSays("card-by-uuid-too", "on the nvidia cards that match the selectors of default/")
	Expect(suite.Kubectl("get", "pod", "-n", "default", "card-by-uuid-too", "-o", "jsonpath={.spec.nodeName}")).To(BeEmpty(),
		"the Pod whose one matching card is held is not let go to a node")

	Expect(suite.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "card-by-uuid"}})).To(Succeed())
	Expect(running("card-by-uuid-too").Spec.NodeName).To(Equal("node-l4-b"))
})

// workloadOf returns the Workload Kueue made for a Pod of the default namespace.
func workloadOf(ctx context.Context, pod string) (*kueue.Workload, error) {
	var wls kueue.WorkloadList
	if err := suite.Client.List(ctx, &wls, client.InNamespace("default")); err != nil {
		return nil, err
	}
	for i, wl := range wls.Items {
		if slices.ContainsFunc(wl.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "Pod" && o.Name == pod }) {
			return &wls.Items[i], nil
		}
	}
	return nil, errors.Errorf("pod %s has no Workload yet", pod)
}

// pendingReason says why Kueue does not admit a Workload: its QuotaReserved condition's message, or, where
// Kueue has not written that yet (its status update can lose a conflict and wait for the next attempt), the
// latest Pending event Kueue recorded on it.
func pendingReason(ctx context.Context, wl *kueue.Workload) (string, error) {
	for _, c := range wl.Status.Conditions {
		if c.Type == kueue.WorkloadQuotaReserved && c.Status == metav1.ConditionFalse && c.Message != "" {
			return c.Message, nil
		}
	}
	var events corev1.EventList
	if err := suite.Client.List(ctx, &events, client.InNamespace(wl.Namespace)); err != nil {
		return "", err
	}
	// Kueue records through the events API, which sets eventTime rather than lastTimestamp.
	at := func(e *corev1.Event) time.Time {
		t := e.LastTimestamp.Time
		if e.EventTime.After(t) {
			t = e.EventTime.Time
		}
		if e.Series != nil && e.Series.LastObservedTime.After(t) {
			t = e.Series.LastObservedTime.Time
		}
		return t
	}
	var latest *corev1.Event
	for i, e := range events.Items {
		if e.InvolvedObject.Kind == "Workload" && e.InvolvedObject.UID == wl.UID && e.Reason == "Pending" &&
			(latest == nil || at(&e).After(at(latest))) {
			latest = &events.Items[i]
		}
	}
	if latest == nil {
		return "no QuotaReserved condition or Pending event yet: " + describeWorkload(wl), nil
	}
	return latest.Message, nil
}

// describeWorkload says what a failing wait needs to know of a Workload: its conditions and admission.
func describeWorkload(wl *kueue.Workload) string {
	if wl == nil {
		return "no Workload"
	}
	var conds []string
	for _, c := range wl.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return fmt.Sprintf("Workload %s: conditions [%s]; admitted: %t", wl.Name, strings.Join(conds, "; "), wl.Status.Admission != nil)
}
