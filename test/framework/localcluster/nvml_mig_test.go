package localcluster

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/nvidia"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// TestNVMLStandInMIGCalls checks the stand-in's answers to the MIG calls, call by call, as the real driver
// gives them: to a card in MIG mode and to one without MIG, for profiles it lacks and placements that do not
// fit, and for instances in use or gone; and that its instances outlive NVML's last shutdown.
func TestNVMLStandInMIGCalls(t *testing.T) {
	bin, skip, err := testenv.BinDir("libnvidia-ml.so.1")
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	// node-h100's eight H100s in MIG mode and, after them, a T4.
	node := inventoryNode(t, "h100-mig.yaml", "node-h100")
	node.Accelerators = append(node.Accelerators, inventoryNode(t, "walkthrough.yaml", "node-t4-a").Accelerators...)
	lib := standIn(t, bin, node)
	cards, _ := detect(t, lib, node)
	reclaimAll(t, lib, cards[0])
	if ret := lib.Init(); ret != nvml.SUCCESS {
		t.Fatalf("Init(): %v", ret)
	}
	defer func() { _ = lib.Shutdown() }()
	h100, _ := lib.DeviceGetHandleByIndex(0)
	t4, _ := lib.DeviceGetHandleByIndex(8)

	// answer is what one call returns: its NVML return and the values the step looks at.
	type answer struct {
		Ret   nvml.Return
		Value any
	}
	var (
		info  nvml.GpuInstanceProfileInfo // 3g.40gb
		gi    nvml.GpuInstance
		ci    nvml.ComputeInstance
		ciGot nvml.ComputeInstanceProfileInfo
	)
	steps := []struct {
		reason string
		fn     string
		call   func() answer
		want   answer
	}{
		{
			reason: "An H100 in MIG mode says so, current and pending.",
			fn:     "GetMigMode",
			call:   func() answer { c, p, ret := h100.GetMigMode(); return answer{ret, [2]int{c, p}} },
			want:   answer{nvml.SUCCESS, [2]int{nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE}},
		},
		{
			reason: "A T4 has no MIG.",
			fn:     "GetMigMode",
			call:   func() answer { _, _, ret := t4.GetMigMode(); return answer{Ret: ret} },
			want:   answer{Ret: nvml.ERROR_NOT_SUPPORTED},
		},
		{
			reason: "Nor any profile.",
			fn:     "GetGpuInstanceProfileInfo",
			call: func() answer {
				_, ret := t4.GetGpuInstanceProfileInfo(nvml.GPU_INSTANCE_PROFILE_1_SLICE)
				return answer{Ret: ret}
			},
			want: answer{Ret: nvml.ERROR_NOT_SUPPORTED},
		},
		{
			reason: "Past NVML's profile constants the enumeration ends.",
			fn:     "GetGpuInstanceProfileInfo",
			call: func() answer {
				_, ret := h100.GetGpuInstanceProfileInfo(nvml.GPU_INSTANCE_PROFILE_COUNT)
				return answer{Ret: ret}
			},
			want: answer{Ret: nvml.ERROR_INVALID_ARGUMENT},
		},
		{
			reason: "The media-extension profile (1g.10gb+me) is not offered.",
			fn:     "GetGpuInstanceProfileInfo",
			call: func() answer {
				_, ret := h100.GetGpuInstanceProfileInfo(nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1)
				return answer{Ret: ret}
			},
			want: answer{Ret: nvml.ERROR_NOT_SUPPORTED},
		},
		{
			reason: "3g.40gb has the driver's profile ID 9, not its constant, three compute slices, two instances and 40 GiB.",
			fn:     "GetGpuInstanceProfileInfo",
			call: func() answer {
				var ret nvml.Return
				info, ret = h100.GetGpuInstanceProfileInfo(nvml.GPU_INSTANCE_PROFILE_3_SLICE)
				return answer{ret, [4]uint64{uint64(info.Id), uint64(info.SliceCount), uint64(info.InstanceCount),
					info.MemorySizeMB}}
			},
			want: answer{nvml.SUCCESS, [4]uint64{9, 3, 2, 40960}},
		},
		{
			reason: "The versioned call names the profile as NVML does.",
			fn:     "GetGpuInstanceProfileInfoV",
			call: func() answer {
				v2, ret := h100.GetGpuInstanceProfileInfoV(nvml.GPU_INSTANCE_PROFILE_3_SLICE).V2()
				v3, ret3 := h100.GetGpuInstanceProfileInfoV(nvml.GPU_INSTANCE_PROFILE_3_SLICE).V3()
				return answer{max(ret, ret3), [2]string{cstring(v2.Name[:]), cstring(v3.Name[:])}}
			},
			want: answer{nvml.SUCCESS, [2]string{"MIG 3g.40gb", "MIG 3g.40gb"}},
		},
		{
			reason: "3g.40gb's placements: memory slices 0 to 3 and 4 to 7.",
			fn:     "GetGpuInstancePossiblePlacements",
			call:   func() answer { pl, ret := h100.GetGpuInstancePossiblePlacements(&info); return answer{ret, pl} },
			want:   answer{nvml.SUCCESS, []nvml.GpuInstancePlacement{{Start: 0, Size: 4}, {Start: 4, Size: 4}}},
		},
		{
			reason: "A placement the profile does not have is refused.",
			fn:     "CreateGpuInstanceWithPlacement",
			call: func() answer {
				_, ret := h100.CreateGpuInstanceWithPlacement(&info, &nvml.GpuInstancePlacement{Start: 1, Size: 4})
				return answer{Ret: ret}
			},
			want: answer{Ret: nvml.ERROR_INVALID_ARGUMENT},
		},
		{
			reason: "The GPU instance at slice 4 takes the driver's ID 2, the second half of the card's slices.",
			fn:     "CreateGpuInstanceWithPlacement",
			call: func() answer {
				var ret nvml.Return
				gi, ret = h100.CreateGpuInstanceWithPlacement(&info, &nvml.GpuInstancePlacement{Start: 4, Size: 4})
				if ret != nvml.SUCCESS {
					return answer{Ret: ret}
				}
				in, ret := gi.GetInfo()
				return answer{ret, [4]uint32{in.Id, in.ProfileId, in.Placement.Start, in.Placement.Size}}
			},
			want: answer{nvml.SUCCESS, [4]uint32{2, 9, 4, 4}},
		},
		{
			reason: "A GPU instance on memory slices an instance holds cannot be made.",
			fn:     "CreateGpuInstanceWithPlacement",
			call: func() answer {
				oneSlice, _ := h100.GetGpuInstanceProfileInfo(nvml.GPU_INSTANCE_PROFILE_1_SLICE)
				_, ret := h100.CreateGpuInstanceWithPlacement(&oneSlice, &nvml.GpuInstancePlacement{Start: 5, Size: 1})
				return answer{Ret: ret}
			},
			want: answer{Ret: nvml.ERROR_INSUFFICIENT_RESOURCES},
		},
		{
			reason: "A MIG call on the T4 is not supported.",
			fn:     "CreateGpuInstanceWithPlacement",
			call: func() answer {
				_, ret := t4.CreateGpuInstanceWithPlacement(&info, &nvml.GpuInstancePlacement{Start: 0, Size: 4})
				return answer{Ret: ret}
			},
			want: answer{Ret: nvml.ERROR_NOT_SUPPORTED},
		},
		{
			reason: "A 3g GPU instance offers a three-slice compute profile once, whose ID is its constant.",
			fn:     "GetComputeInstanceProfileInfo",
			call: func() answer {
				var ret nvml.Return
				ciGot, ret = gi.GetComputeInstanceProfileInfo(nvml.COMPUTE_INSTANCE_PROFILE_3_SLICE,
					nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
				return answer{ret, [3]uint32{ciGot.Id, ciGot.SliceCount, ciGot.InstanceCount}}
			},
			want: answer{nvml.SUCCESS, [3]uint32{nvml.COMPUTE_INSTANCE_PROFILE_3_SLICE, 3, 1}},
		},
		{
			reason: "Nor a compute profile larger than itself.",
			fn:     "GetComputeInstanceProfileInfo",
			call: func() answer {
				_, ret := gi.GetComputeInstanceProfileInfo(nvml.COMPUTE_INSTANCE_PROFILE_4_SLICE,
					nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
				return answer{Ret: ret}
			},
			want: answer{Ret: nvml.ERROR_NOT_SUPPORTED},
		},
		{
			reason: "Its compute instance is number 0 and covers it.",
			fn:     "CreateComputeInstance",
			call: func() answer {
				var ret nvml.Return
				if ci, ret = gi.CreateComputeInstance(&ciGot); ret != nvml.SUCCESS {
					return answer{Ret: ret}
				}
				in, ret := ci.GetInfo()
				return answer{ret, [4]uint32{in.Id, in.ProfileId, in.Placement.Start, in.Placement.Size}}
			},
			want: answer{nvml.SUCCESS, [4]uint32{0, nvml.COMPUTE_INSTANCE_PROFILE_3_SLICE, 0, 3}},
		},
		{
			reason: "A second does not fit.",
			fn:     "CreateComputeInstance",
			call:   func() answer { _, ret := gi.CreateComputeInstance(&ciGot); return answer{Ret: ret} },
			want:   answer{Ret: nvml.ERROR_INSUFFICIENT_RESOURCES},
		},
		{
			reason: "A GPU instance with a compute instance is in use.",
			fn:     "GpuInstance.Destroy",
			call:   func() answer { return answer{Ret: gi.Destroy()} },
			want:   answer{Ret: nvml.ERROR_IN_USE},
		},
		{
			reason: "The instances outlive NVML's last shutdown, after which go-nvml closes the library.",
			fn:     "GetGpuInstances",
			call: func() answer {
				if ret := max(lib.Shutdown(), lib.Init()); ret != nvml.SUCCESS {
					return answer{Ret: ret}
				}
				h100, _ = lib.DeviceGetHandleByIndex(0)
				gis, ret := h100.GetGpuInstances(&info)
				var ids []uint32
				for _, g := range gis {
					in, _ := g.GetInfo()
					cis, _ := g.GetComputeInstances(&ciGot)
					ids = append(ids, in.Id, uint32(len(cis)))
				}
				return answer{ret, ids}
			},
			want: answer{nvml.SUCCESS, []uint32{2, 1}},
		},
		{
			reason: "NVML counts its inits: one shutdown of two leaves it usable.",
			fn:     "DeviceGetCount",
			call: func() answer {
				if ret := max(lib.Init(), lib.Shutdown()); ret != nvml.SUCCESS {
					return answer{Ret: ret}
				}
				_, ret := lib.DeviceGetCount()
				return answer{Ret: ret}
			},
			want: answer{Ret: nvml.SUCCESS},
		},
		{
			reason: "Compute instance first, the GPU instance is destroyed.",
			fn:     "Destroy",
			call:   func() answer { return answer{max(ci.Destroy(), gi.Destroy()), nil} },
			want:   answer{Ret: nvml.SUCCESS},
		},
		{
			reason: "A destroyed instance's handle is no longer valid.",
			fn:     "GpuInstance.Destroy",
			call:   func() answer { return answer{Ret: gi.Destroy()} },
			want:   answer{Ret: nvml.ERROR_INVALID_ARGUMENT},
		},
		{
			reason: "And the card lists no GPU instance.",
			fn:     "GetGpuInstances",
			call:   func() answer { gis, ret := h100.GetGpuInstances(&info); return answer{ret, len(gis)} },
			want:   answer{nvml.SUCCESS, 0},
		},
	}
	for i, s := range steps {
		if diff := cmp.Diff(s.want, s.call()); diff != "" {
			t.Errorf("%s\nstep %d, %s(...): -want, +got:\n%s", s.reason, i, s.fn, diff)
		}
	}
}

// cstring is a NUL-terminated C string of go-nvml's.
func cstring(b []int8) string {
	var out []byte
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// TestNVMLStandInMIG runs the NVIDIA backend's MIG lifecycle (nvidia.NewMIG) through the stand-in on a card of
// each MIG geometry: partitions made at the first free placement and named as the toolkit takes them, with a
// real driver's instance IDs; one that does not fit refused; one released; the gone owners' and the orphans'
// reclaimed. The simulated lifecycle (simulated.Partitions), which the simulated nodes run instead, must
// refuse and hold the same for the same steps; it has no Release, so a release is its owner's partition
// reclaimed.
func TestNVMLStandInMIG(t *testing.T) {
	bin, skip, err := testenv.BinDir("libnvidia-ml.so.1")
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	type step struct {
		// op is create, orphan (created by an agent that then restarted: nobody holds it), release (the
		// owner's partition) or reclaim (of all but the live owners).
		op, profile, owner string
		live               []string
	}
	// outcome is a step's result: the partition's device name (the card's UUID written <card>), or the error
	// cut to what both backends say of a full card; and the card's partitions after it, sorted.
	type outcome struct {
		Device, Err string
		Held        []string
	}
	create := func(profile, owner string) step { return step{op: "create", profile: profile, owner: owner} }
	cases := map[string]struct {
		reason          string
		inventory, node string
		steps           []step
		want            []outcome
	}{
		"H100": {
			reason:    "An H100 80GB: 4g.40gb and 3g.40gb fill it; a released 4g.40gb leaves room for a 2g.20gb.",
			inventory: "h100-mig.yaml", node: "node-h100",
			steps: []step{
				create("4g.40gb", "pod-a"), create("3g.40gb", "pod-b"), create("1g.10gb", "pod-c"),
				{op: "release", owner: "pod-a"}, create("2g.20gb", "pod-c"),
				{op: "orphan", profile: "1g.10gb", owner: "pod-old"}, {op: "reclaim", live: []string{"pod-c"}},
			},
			want: []outcome{
				{Device: "MIG-<card>/1/0", Held: []string{"4g.40gb"}},
				{Device: "MIG-<card>/2/0", Held: []string{"3g.40gb", "4g.40gb"}},
				{Err: "no free placement", Held: []string{"3g.40gb", "4g.40gb"}},
				{Held: []string{"3g.40gb"}},
				{Device: "MIG-<card>/3/0", Held: []string{"2g.20gb", "3g.40gb"}},
				{Device: "MIG-<card>/9/0", Held: []string{"1g.10gb", "2g.20gb", "3g.40gb"}},
				{Held: []string{"2g.20gb"}},
			},
		},
		"A100": {
			reason:    "An A100 80GB: its seven 1g.10gb placements run out; 7g.80gb needs the whole card.",
			inventory: "h100-mig.yaml", node: "node-a100",
			steps: []step{
				create("1g.10gb", "pod-0"), create("1g.10gb", "pod-1"), create("1g.10gb", "pod-2"), create("1g.10gb", "pod-3"),
				create("1g.10gb", "pod-4"), create("1g.10gb", "pod-5"), create("1g.10gb", "pod-6"), create("1g.10gb", "pod-7"),
				{op: "reclaim", live: []string{"pod-3"}}, create("7g.80gb", "pod-8"),
				{op: "release", owner: "pod-3"}, create("7g.80gb", "pod-8"),
			},
			want: []outcome{
				{Device: "MIG-<card>/7/0", Held: repeat(1, "1g.10gb")},
				{Device: "MIG-<card>/8/0", Held: repeat(2, "1g.10gb")},
				{Device: "MIG-<card>/9/0", Held: repeat(3, "1g.10gb")},
				{Device: "MIG-<card>/10/0", Held: repeat(4, "1g.10gb")},
				{Device: "MIG-<card>/11/0", Held: repeat(5, "1g.10gb")},
				{Device: "MIG-<card>/12/0", Held: repeat(6, "1g.10gb")},
				{Device: "MIG-<card>/13/0", Held: repeat(7, "1g.10gb")},
				{Err: "no free placement", Held: repeat(7, "1g.10gb")},
				{Held: []string{"1g.10gb"}},
				{Err: "no free placement", Held: []string{"1g.10gb"}},
				{},
				{Device: "MIG-<card>/0/0", Held: []string{"7g.80gb"}},
			},
		},
		"A30": {
			reason:    "An A30: four memory slices, two 2g.12gb fill it.",
			inventory: "nine-vendors.yaml", node: "node-a30",
			steps: []step{
				create("2g.12gb", "pod-a"), create("2g.12gb", "pod-b"), create("1g.6gb", "pod-c"),
				{op: "release", owner: "pod-a"}, create("1g.6gb", "pod-c"), create("1g.6gb", "pod-d"),
				create("4g.24gb", "pod-e"), {op: "reclaim", live: []string{"pod-d"}},
			},
			want: []outcome{
				{Device: "MIG-<card>/1/0", Held: []string{"2g.12gb"}},
				{Device: "MIG-<card>/2/0", Held: []string{"2g.12gb", "2g.12gb"}},
				{Err: "no free placement", Held: []string{"2g.12gb", "2g.12gb"}},
				{Held: []string{"2g.12gb"}},
				{Device: "MIG-<card>/3/0", Held: []string{"1g.6gb", "2g.12gb"}},
				{Device: "MIG-<card>/4/0", Held: []string{"1g.6gb", "1g.6gb", "2g.12gb"}},
				{Err: "no free placement", Held: []string{"1g.6gb", "1g.6gb", "2g.12gb"}},
				{Held: []string{"1g.6gb"}},
			},
		},
	}
	// said cuts an error to what both backends say of a card without room, or "" for none.
	said := func(err error) string {
		switch {
		case err == nil:
			return ""
		case strings.Contains(err.Error(), "no free placement for"):
			return "no free placement"
		}
		return err.Error()
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			node := inventoryNode(t, tc.inventory, tc.node)
			lib := standIn(t, bin, node)
			detected, simulatedCards := detect(t, lib, node)
			card, simCard := detected[0], simulatedCards[0]
			reclaimAll(t, lib, card)
			mig, sim := nvidia.NewMIG(lib), simulated.NewPartitions()
			devices := map[string]string{}
			for i, s := range tc.steps {
				var got, simGot outcome
				switch s.op {
				case "create", "orphan":
					m := mig
					if s.op == "orphan" {
						m = nvidia.NewMIG(lib)
					}
					dev, err := m.Create(ctx, card, s.profile, s.owner)
					devices[s.owner], got.Device, got.Err = dev, strings.ReplaceAll(dev, card.UUID, "<card>"), said(err)
					_, err = sim.Create(ctx, simCard, s.profile, s.owner)
					simGot.Err = said(err)
				case "release":
					if err := mig.Release(ctx, card, devices[s.owner]); err != nil {
						got.Err = err.Error()
					}
					sim.Reclaim(ctx, simCard, func(owner string) bool { return owner != s.owner })
				case "reclaim":
					live := func(owner string) bool { return slices.Contains(s.live, owner) }
					if errs := mig.Reclaim(ctx, card, live); len(errs) > 0 {
						got.Err = fmt.Sprint(errs)
					}
					sim.Reclaim(ctx, simCard, live)
				}
				got.Held, simGot.Held = held(t, lib, card), sim.Held(simCard.UUID)
				sort.Strings(simGot.Held)
				fn := map[string]string{"create": "Create", "orphan": "Create", "release": "Release", "reclaim": "Reclaim"}[s.op]
				if diff := cmp.Diff(tc.want[i], got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s\nstep %d, MIG.%s(%s, %s): -want, +got:\n%s", tc.reason, i, fn, s.profile, s.owner, diff)
				}
				if diff := cmp.Diff(outcome{Err: got.Err, Held: got.Held}, simGot, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s\nstep %d, Partitions.%s(%s, %s): -NVIDIA backend, +simulated:\n%s",
						tc.reason, i, fn, s.profile, s.owner, diff)
				}
			}
		})
	}
}

// held lists the profiles of the card's GPU instances, sorted, read through NVML as the driver lists them.
func held(t *testing.T, lib nvml.Interface, card providers.Device) []string {
	t.Helper()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		t.Fatalf("Init(): %v", ret)
	}
	defer func() { _ = lib.Shutdown() }()
	h, ret := lib.DeviceGetHandleByUUID(card.UUID)
	if ret != nvml.SUCCESS {
		t.Fatalf("DeviceGetHandleByUUID(%s): %v", card.UUID, ret)
	}
	var out []string
	for profile := range nvml.GPU_INSTANCE_PROFILE_COUNT {
		info, ret := h.GetGpuInstanceProfileInfo(profile)
		if ret != nvml.SUCCESS {
			continue
		}
		gis, _ := h.GetGpuInstances(&info)
		for _, p := range card.Partitions {
			if p.ComputeSlices == int32(info.SliceCount) && p.MemoryMiB == int64(info.MemorySizeMB) {
				out = append(out, repeat(len(gis), p.Name)...)
			}
		}
	}
	sort.Strings(out)
	return out
}

func repeat(n int, s string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
