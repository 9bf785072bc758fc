package nvidia

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/providers"
)

// migNode is one H100 of go-nvml's DGX H100 mock in MIG mode, with the MIG lifecycle over it.
func migNode(t *testing.T) (*server.Server, *MIG, providers.Device) {
	t.Helper()
	s := dgxh100.New()
	s.Devices = s.Devices[:1]
	d := s.Devices[0].(*server.Device)
	d.MigMode = nvml.DEVICE_MIG_ENABLE
	devices, err := New(s).Detect(context.Background())
	if err != nil || len(devices) != 1 {
		t.Fatalf("Detect(...): %v, %d cards", err, len(devices))
	}
	m := NewMIG(s)
	m.Wait = func(time.Duration) {}
	return s, m, devices[0]
}

// gpuInstances counts the card's GPU instances per profile.
func gpuInstances(t *testing.T, m *MIG, s *server.Server, card providers.Device) map[string]int {
	t.Helper()
	h, _ := s.DeviceGetHandleByUUID(card.UUID)
	out := map[string]int{}
	for _, in := range m.instances(h, card.Product) {
		out[in.profile]++
	}
	return out
}

func TestMIGLifecycle(t *testing.T) {
	ctx := context.Background()
	s, m, card := migNode(t)

	first, err := m.Create(ctx, card, "3g.40gb", "pod-a")
	if err != nil {
		t.Fatalf("Create(3g.40gb): %v", err)
	}
	if !strings.HasPrefix(first, "MIG-"+card.UUID+"/") {
		t.Errorf("Create(...): device %q is not named MIG-<card>/<gi>/<ci>", first)
	}
	second, err := m.Create(ctx, card, "3g.40gb", "pod-a")
	if err != nil {
		t.Fatalf("Create(3g.40gb) a second time: %v", err)
	}
	if second == first {
		t.Errorf("Create(...): a held partition %q was handed out twice", first)
	}
	if diff := cmp.Diff(map[string]int{"3g.40gb": 2}, gpuInstances(t, m, s, card)); diff != "" {
		t.Errorf("two 3g.40gb GPU instances, at the profile's two placements: -want, +got:\n%s", diff)
	}
	if _, err := m.Create(ctx, card, "3g.40gb", "pod-a"); err == nil || !strings.Contains(err.Error(), "no free placement for 3g.40gb") {
		t.Errorf("Create(...) on a full card: want no free placement, got %v", err)
	}

	// Released, its GPU instance is gone, and a new Create makes one at the freed placement.
	if err := m.Release(ctx, card, first); err != nil {
		t.Fatalf("Release(...): %v", err)
	}
	if diff := cmp.Diff(map[string]int{"3g.40gb": 1}, gpuInstances(t, m, s, card)); diff != "" {
		t.Errorf("Release destroys the compute and the GPU instance: -want, +got:\n%s", diff)
	}
	if _, err := m.Create(ctx, card, "3g.40gb", "pod-a"); err != nil {
		t.Errorf("Create(...) after a Release: %v", err)
	}
}

func TestMIGReuse(t *testing.T) {
	ctx := context.Background()
	s, m, card := migNode(t)
	// A GPU instance made by an earlier agent, which nobody holds now, is taken as it is.
	earlier := NewMIG(s)
	made, err := earlier.Create(ctx, card, "1g.10gb", "pod-old")
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Create(ctx, card, "1g.10gb", "pod-a")
	if err != nil {
		t.Fatal(err)
	}
	if got != made {
		t.Errorf("Create(...): want the existing %q reused, got %q", made, got)
	}
	if diff := cmp.Diff(map[string]int{"1g.10gb": 1}, gpuInstances(t, m, s, card)); diff != "" {
		t.Errorf("no second GPU instance is made: -want, +got:\n%s", diff)
	}
}

func TestMIGInUse(t *testing.T) {
	ctx := context.Background()
	s, m, card := migNode(t)
	name, err := m.Create(ctx, card, "1g.10gb", "pod-a")
	if err != nil {
		t.Fatal(err)
	}
	h, _ := s.DeviceGetHandleByUUID(card.UUID)
	gi := m.instances(h, card.Product)[0].gi.(*server.GpuInstance)
	var ci *server.ComputeInstance
	for c := range gi.ComputeInstances {
		ci = c
	}
	// The compute instance is busy for two tries, then lets go: the release waits it out.
	busy, destroy := 2, ci.DestroyFunc
	ci.DestroyFunc = func() nvml.Return {
		if busy > 0 {
			busy--
			return nvml.ERROR_IN_USE
		}
		return destroy()
	}
	if err := m.Release(ctx, card, name); err != nil {
		t.Fatalf("Release(...) of an instance busy twice: %v", err)
	}
	if n := len(gpuInstances(t, m, s, card)); n != 0 {
		t.Errorf("Release(...): %d GPU instances left, want 0", n)
	}

	// Busy for longer than the attempts: reported, and left in place.
	name, _ = m.Create(ctx, card, "1g.10gb", "pod-a")
	gi = m.instances(h, card.Product)[0].gi.(*server.GpuInstance)
	for c := range gi.ComputeInstances {
		c.DestroyFunc = func() nvml.Return { return nvml.ERROR_IN_USE }
	}
	s.ErrorStringFunc = func(r nvml.Return) string { return "In use by another client" }
	err = m.Release(ctx, card, name)
	if err == nil || !strings.Contains(err.Error(), "compute instance: In use by another client") {
		t.Errorf("Release(...) of an instance that stays busy: want the NVML error, got %v", err)
	}
	if n := len(gpuInstances(t, m, s, card)); n != 1 {
		t.Errorf("an instance in use is not destroyed: %d GPU instances, want 1", n)
	}
}

func TestMIGReclaim(t *testing.T) {
	ctx := context.Background()
	s, m, card := migNode(t)
	if _, err := m.Create(ctx, card, "2g.20gb", "pod-running"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, card, "1g.20gb", "pod-gone"); err != nil {
		t.Fatal(err)
	}
	// Made by hand, or by the agent before it restarted: nobody holds it.
	if _, err := NewMIG(s).Create(ctx, card, "1g.10gb", "pod-before-restart"); err != nil {
		t.Fatal(err)
	}
	if errs := m.Reclaim(ctx, card, func(owner string) bool { return owner == "pod-running" }); len(errs) > 0 {
		t.Fatalf("Reclaim(...): %v", errs)
	}
	if diff := cmp.Diff(map[string]int{"2g.20gb": 1}, gpuInstances(t, m, s, card)); diff != "" {
		t.Errorf("the running Pod's partition stays; the gone Pod's and the orphan go: -want, +got:\n%s", diff)
	}
}
