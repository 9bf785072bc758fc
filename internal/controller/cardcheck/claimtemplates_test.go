package cardcheck_test

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gpustack/gpustack-operator/internal/controller/cardcheck"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
)

// claimWorkload returns a Workload of pods Pods whose claim gpu is made from the ResourceClaimTemplate
// template, quota reserved on flavor, as Kueue makes one for a Job whose Pods ask for cards through DRA.
func claimWorkload(name, flavor, template string, pods int32) (*kueue.Workload, kueue.WorkloadStatus) {
	wl, st := makeWorkload(name, flavor, map[string]string{"cpu": "1"}, true)
	spec := &wl.Spec.PodSets[0].Template.Spec
	spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To(template)}}
	spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	wl.Spec.PodSets[0].Count = pods
	st.Admission.PodSetAssignments[0].Count = ptr.To(pods)
	return wl, st
}

// claimTemplate is a ResourceClaimTemplate of the default namespace asking request.
func claimTemplate(name string, request resourceapi.DeviceRequest) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{request}}}}}
}

// Kueue charges a Workload whose Pods ask for cards through DRA the credits of its claims, but does not know
// which node's cards are free: four Pods of one card each pass its quota on a flavor of nodes with two free
// cards between them. The check counts what each Pod's ResourceClaimTemplate asks of the project's
// DeviceClasses and places the Pods card by card, as it places Pods that ask the device plugins.
var _ = DescribeTable("places the Pods of a Workload that ask for cards through ResourceClaimTemplates card by card",
	func(key string, held map[string]int64, template *resourceapi.ResourceClaimTemplate, w want) {
		ctx := context.Background()
		suite.Create(&kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: key},
			Spec: kueue.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": key}}})
		for _, n := range []string{"a", "b", "c"} {
			node := key + "-" + n
			suite.Create(builders.MakeNode(node).Label("pool", key).Obj(), builders.MakeDevices(node).Cards("nvidia", "NVIDIA A10G", 24576, 2).Obj())
			if held[n] > 0 {
				suite.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: node + "-holder"},
					Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "busybox",
						Resources: corev1.ResourceRequirements{Limits: limits(map[string]string{"nvidia.com/gpu": fmt.Sprint(held[n])})}}}},
					Status: corev1.PodStatus{Phase: corev1.PodRunning}})
			}
		}
		name := key + "-one-card"
		if template != nil {
			template.Name = name
			suite.Create(template)
		}
		wl, st := claimWorkload(key, key, name, 4)
		// The suite's client has no index of claims by pool (the worker's cache has): the nodes' allocated claims
		// are not read, the templates are.
		r := &cardcheck.Reconciler{Client: suite.Client, Log: logr.Discard(), Recorder: record.NewFakeRecorder(10),
			ResourceClaimTemplates: true}
		s := judgeOnceBy(ctx, r, wl, st)
		Expect(s.State).To(Equal(w.State))
		Expect(s.Message).To(ContainSubstring(w.Message))
	},
	Entry("four Pods of one card on nodes of two free cards each: two nodes", "dra-fits", map[string]int64{"c": 2},
		claimTemplate("", resourceapi.DeviceRequest{Name: "card", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpustack-nvidia"}}),
		want{State: kueue.CheckStateReady, Message: "fits on nodes dra-fits-a, dra-fits-b"}),
	Entry("four Pods of one card where one node has two free cards and the others none: waits", "dra-full",
		map[string]int64{"b": 2, "c": 2},
		claimTemplate("", resourceapi.DeviceRequest{Name: "card", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpustack-nvidia"}}),
		want{State: kueue.CheckStateRetry, Message: "pool flavor dra-full cannot take 4 Pods of 1 whole card(s) now: Pod 3 of 4"}),
	Entry("a request of another driver's class asks for none of the project's cards", "dra-other", map[string]int64{"a": 2, "b": 2, "c": 2},
		claimTemplate("", resourceapi.DeviceRequest{Name: "nic", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "rdma.example.com"}}),
		want{State: kueue.CheckStateReady, Message: "asks for no accelerator"}),
	Entry("a template that asks for all of a class's cards is not counted, and says so", "dra-all", nil,
		claimTemplate("", resourceapi.DeviceRequest{Name: "every", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpustack-nvidia",
			AllocationMode: resourceapi.DeviceAllocationModeAll}}),
		want{State: kueue.CheckStateRetry, Message: "PodSet main's ResourceClaimTemplate dra-all-one-card: request every asks for all the devices"}),
	Entry("a template that does not exist: waits, naming it", "dra-missing", nil, nil,
		want{State: kueue.CheckStateRetry, Message: "PodSet main's claim gpu names ResourceClaimTemplate dra-missing-one-card, which does not exist"}),
)

// publishCards makes the ResourceSlice the NVIDIA driver publishes for a node of cards cards: one device each,
// card-<index>, with its index as an attribute.
func publishCards(node string, cards int) {
	GinkgoHelper()
	slice := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-nvidia"}, Spec: resourceapi.ResourceSliceSpec{
		Driver: "nvidia.gpustack.ai", NodeName: ptr.To(node), Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}}}
	for i := range cards {
		slice.Spec.Devices = append(slice.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("card-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"index": {IntValue: ptr.To(int64(i))}}})
	}
	suite.Create(slice)
}

// A request may narrow the cards it takes with CEL selectors; the scheduler's allocator then gives it only a
// card that matches, so the check places it only there too, reading the cards' devices from the nodes'
// ResourceSlices.
var _ = DescribeTable("places a request with selectors only on the cards whose devices match them",
	func(key, selector string, resourceSlices bool, w want) {
		ctx := context.Background()
		suite.Create(&kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: key},
			Spec: kueue.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": key}}})
		for _, n := range []string{"a", "b"} {
			node := key + "-" + n
			suite.Create(builders.MakeNode(node).Label("pool", key).Obj(), builders.MakeDevices(node).Cards("nvidia", "NVIDIA A10G", 24576, 2).Obj())
			publishCards(node, 2)
		}
		name := key + "-card"
		suite.Create(claimTemplate(name, resourceapi.DeviceRequest{Name: "card", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpustack-nvidia",
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: selector}}}}}))
		wl, st := claimWorkload(key, key, name, 2)
		r := &cardcheck.Reconciler{Client: suite.Client, Log: logr.Discard(), Recorder: record.NewFakeRecorder(10),
			ResourceClaimTemplates: true, ResourceSlices: resourceSlices}
		s := judgeOnceBy(ctx, r, wl, st)
		Expect(s.State).To(Equal(w.State))
		Expect(s.Message).To(ContainSubstring(w.Message))
	},
	Entry("two Pods that want each node's second card: one on each node", "dra-second",
		`device.attributes["nvidia.gpustack.ai"].index == 1`, true,
		want{State: kueue.CheckStateReady, Message: "fits on nodes dra-second-a, dra-second-b"}),
	Entry("a selector every card matches: both on the first node", "dra-any",
		`device.attributes["nvidia.gpustack.ai"].index >= 0`, true,
		want{State: kueue.CheckStateReady, Message: "fits on node dra-any-a"}),
	Entry("a selector no card matches: waits, saying so", "dra-none",
		`device.attributes["nvidia.gpustack.ai"].index == 7`, true,
		want{State: kueue.CheckStateRetry, Message: "dra-none-a: no nvidia card matches the selectors of default/dra-none/main/0/gpu/card"}),
	Entry("where the worker may not read ResourceSlices, the selectors are not read", "dra-unread",
		`device.attributes["nvidia.gpustack.ai"].index == 1`, false,
		want{State: kueue.CheckStateReady, Message: "fits on node dra-unread-a"}),
)
