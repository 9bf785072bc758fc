package deviceplugins

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	resourceapi "k8s.io/api/resource/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager/dra"
	"github.com/gpustack/gpustack-operator/test/framework/e2esuite"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Every node's device manager registers its vendor's DRA driver with the node's real kubelet (which removes a
// node's slices when it starts, and keeps only a registered driver's) and publishes the node's cards as
// ResourceSlices: each healthy card of each node's ledger is there once, under its vendor's driver, in the node's pool,
// with the card's memory as capacity; and the chart made every vendor's DeviceClass.
var _ = It("lists every node's cards as ResourceSlices of its vendor's DRA driver, and the vendors' DeviceClasses", func(ctx context.Context) {
	var devices workerv1.DevicesList
	Expect(suite.Client.List(ctx, &devices)).To(Succeed())
	want := map[string][]string{}
	for _, d := range devices.Items {
		for _, g := range d.Spec.Groups {
			for _, a := range g.Accelerators {
				if a.Status.Unhealthy {
					continue
				}
				key := d.Name + " " + dra.DriverName(g.Manufacturer)
				want[key] = append(want[key], fmt.Sprintf("%s %dMi", a.ID, g.Memory))
			}
		}
	}
	Expect(want).NotTo(BeEmpty())
	for _, cards := range want {
		sort.Strings(cards)
	}
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
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
