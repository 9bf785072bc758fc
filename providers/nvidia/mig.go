package nvidia

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/providers"
)

// MIG runs the MIG lifecycle of a node's cards on NVML (docs/architecture.md, Partitions). A partition is a GPU
// instance of the profile at the card's first free placement with one compute instance covering it; one that
// exists and nobody holds is reused. Released partitions and orphans (created by hand, or held by an agent
// that restarted) are destroyed compute instance first, retrying while NVML answers IN_USE.
type MIG struct {
	lib nvml.Interface
	// Attempts is how often a destroy is tried while the instance is in use; Wait is the pause between tries.
	Attempts int
	Wait     func(time.Duration)

	mu sync.Mutex
	// held maps the partitions handed out to the Pod (UID) each was made for.
	held map[string]string
}

// NewMIG returns the MIG lifecycle over an initialised NVML library.
func NewMIG(lib nvml.Interface) *MIG {
	return &MIG{lib: lib, Attempts: 5, Wait: time.Sleep, held: map[string]string{}}
}

// migInstance is one GPU instance with its compute instance.
type migInstance struct {
	gi      nvml.GpuInstance
	giID    uint32
	ci      nvml.ComputeInstance
	ciID    uint32
	profile string
	start   uint32
	size    uint32
}

// deviceName names a partition as the NVIDIA container toolkit takes it in NVIDIA_VISIBLE_DEVICES:
// MIG-<GPU UUID>/<GPU instance>/<compute instance>.
func deviceName(card string, gi, ci uint32) string {
	return fmt.Sprintf("MIG-%s/%d/%d", card, gi, ci)
}

// Create makes one partition of the profile on the card for the owner (a Pod's UID) and returns its device
// name: a GPU instance of the profile that nobody holds, or a new one at the first free placement.
func (m *MIG) Create(_ context.Context, card providers.Device, profile, owner string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.open()()
	h, ret := getArg(m.lib.DeviceGetHandleByUUID, card.UUID)
	if ret != nvml.SUCCESS {
		return "", errors.Errorf("cannot open card %s: %s", card.UUID, errorString(m.lib, ret))
	}
	info, ok := m.profileInfo(h, card.Product, profile)
	if !ok {
		return "", errors.Errorf("card %s offers no %s profile", card.UUID, profile)
	}
	existing := m.instances(h, card.Product)
	for _, in := range existing {
		if in.profile != profile {
			continue
		}
		if in.ci == nil {
			ci, err := createCompute(in.gi, info)
			if err != nil {
				return "", err
			}
			in.ci, in.ciID = ci, computeID(ci)
		}
		if name := deviceName(card.UUID, in.giID, in.ciID); m.held[name] == "" {
			m.held[name] = owner
			return name, nil
		}
	}
	placements, ret := getArg(h.GetGpuInstancePossiblePlacements, &info)
	if ret != nvml.SUCCESS {
		return "", errors.Errorf("cannot read the placements of %s on card %s: %s", profile, card.UUID, errorString(m.lib, ret))
	}
	for _, pl := range placements {
		if overlaps(existing, pl) {
			continue
		}
		gi, ret := m.createGPU(h, info, pl)
		if ret != nvml.SUCCESS {
			return "", errors.Errorf("cannot create a %s GPU instance at slice %d of card %s: %s", profile, pl.Start, card.UUID, errorString(m.lib, ret))
		}
		ci, err := createCompute(gi, info)
		if err != nil {
			_ = call(gi.Destroy)
			return "", err
		}
		name := deviceName(card.UUID, gpuID(gi), computeID(ci))
		m.held[name] = owner
		return name, nil
	}
	return "", errors.Errorf("card %s has no free placement for %s", card.UUID, profile)
}

func (m *MIG) createGPU(h nvml.Device, info nvml.GpuInstanceProfileInfo, pl nvml.GpuInstancePlacement) (gi nvml.GpuInstance, ret nvml.Return) {
	defer func() {
		if recover() != nil {
			ret = nvml.ERROR_NOT_SUPPORTED
		}
	}()
	return h.CreateGpuInstanceWithPlacement(&info, &pl)
}

// Release destroys a partition Create returned: its compute instance, then its GPU instance.
func (m *MIG) Release(_ context.Context, card providers.Device, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.open()()
	h, ret := getArg(m.lib.DeviceGetHandleByUUID, card.UUID)
	if ret != nvml.SUCCESS {
		return errors.Errorf("cannot open card %s: %s", card.UUID, errorString(m.lib, ret))
	}
	for _, in := range m.instances(h, card.Product) {
		if in.ci != nil && deviceName(card.UUID, in.giID, in.ciID) == name {
			if err := m.destroy(in); err != nil {
				return errors.Wrapf(err, "cannot release %s", name)
			}
			delete(m.held, name)
			return nil
		}
	}
	delete(m.held, name)
	return nil
}

// Reclaim destroys the card's partitions whose Pod is gone (live says which owners still run) and the
// orphans nobody holds: made by hand, or by an agent before it restarted. One still in use (a container of a
// Pod the agent does not know) answers IN_USE, is reported and left for the next round.
func (m *MIG) Reclaim(_ context.Context, card providers.Device, live func(owner string) bool) []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.open()()
	h, ret := getArg(m.lib.DeviceGetHandleByUUID, card.UUID)
	if ret != nvml.SUCCESS {
		return []error{errors.Errorf("cannot open card %s: %s", card.UUID, errorString(m.lib, ret))}
	}
	var errs []error
	for _, in := range m.instances(h, card.Product) {
		name := deviceName(card.UUID, in.giID, in.ciID)
		if owner := m.held[name]; in.ci != nil && owner != "" && live(owner) {
			continue
		}
		if err := m.destroy(in); err != nil {
			errs = append(errs, errors.Wrapf(err, "cannot reclaim the %s instance %d of card %s", in.profile, in.giID, card.UUID))
			continue
		}
		delete(m.held, name)
	}
	return errs
}

// open initialises NVML for one operation and returns its shutdown; NVML counts the two.
func (m *MIG) open() func() {
	_ = call(m.lib.Init)
	return func() { _ = call(m.lib.Shutdown) }
}

// destroy removes the compute instance and then the GPU instance, each retried while NVML says it is in use.
func (m *MIG) destroy(in migInstance) error {
	if in.ci != nil {
		if err := m.retry(in.ci.Destroy); err != nil {
			return errors.Wrap(err, "compute instance")
		}
	}
	return errors.Wrap(m.retry(in.gi.Destroy), "GPU instance")
}

func (m *MIG) retry(destroy func() nvml.Return) error {
	var ret nvml.Return
	for i := 0; i < max(m.Attempts, 1); i++ {
		if ret = call(destroy); ret != nvml.ERROR_IN_USE {
			break
		}
		if i+1 < m.Attempts {
			m.Wait(time.Duration(i+1) * 200 * time.Millisecond)
		}
	}
	if ret != nvml.SUCCESS {
		return errors.New(errorString(m.lib, ret))
	}
	return nil
}

// profileInfo finds the GPU-instance profile that Detect names profile on this card.
func (m *MIG) profileInfo(h nvml.Device, product, profile string) (nvml.GpuInstanceProfileInfo, bool) {
	for _, id := range migProfiles {
		info, ret := getArg(h.GetGpuInstanceProfileInfo, id)
		if ret == nvml.SUCCESS && info.InstanceCount > 0 && profileName(info, product) == profile {
			return info, true
		}
	}
	return nvml.GpuInstanceProfileInfo{}, false
}

// instances lists the card's GPU instances with their first compute instance, by GPU instance ID.
func (m *MIG) instances(h nvml.Device, product string) []migInstance {
	var out []migInstance
	for _, id := range migProfiles {
		info, ret := getArg(h.GetGpuInstanceProfileInfo, id)
		if ret != nvml.SUCCESS || info.InstanceCount == 0 {
			continue
		}
		gis, ret := getArg(h.GetGpuInstances, &info)
		if ret != nvml.SUCCESS {
			continue
		}
		for _, gi := range gis {
			gInfo, ret := get(gi.GetInfo)
			if ret != nvml.SUCCESS {
				continue
			}
			in := migInstance{gi: gi, giID: gInfo.Id, profile: profileName(info, product), start: gInfo.Placement.Start, size: gInfo.Placement.Size}
			if ci := firstCompute(gi, info); ci != nil {
				in.ci, in.ciID = ci, computeID(ci)
			}
			out = append(out, in)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].giID < out[j].giID })
	return out
}

// overlaps reports whether the placement takes a slice an existing GPU instance holds.
func overlaps(existing []migInstance, pl nvml.GpuInstancePlacement) bool {
	for _, in := range existing {
		if pl.Start < in.start+in.size && in.start < pl.Start+pl.Size {
			return true
		}
	}
	return false
}

// computeProfile is the compute-instance profile that covers a GPU instance of the given compute slices.
func computeProfile(slices uint32) int {
	switch slices {
	case 1:
		return nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE
	case 2:
		return nvml.COMPUTE_INSTANCE_PROFILE_2_SLICE
	case 3:
		return nvml.COMPUTE_INSTANCE_PROFILE_3_SLICE
	case 4:
		return nvml.COMPUTE_INSTANCE_PROFILE_4_SLICE
	case 6:
		return nvml.COMPUTE_INSTANCE_PROFILE_6_SLICE
	case 8:
		return nvml.COMPUTE_INSTANCE_PROFILE_8_SLICE
	}
	return nvml.COMPUTE_INSTANCE_PROFILE_7_SLICE
}

// createCompute makes the one compute instance that covers the whole GPU instance.
func createCompute(gi nvml.GpuInstance, info nvml.GpuInstanceProfileInfo) (nvml.ComputeInstance, error) {
	ciInfo, ret := get(func() (nvml.ComputeInstanceProfileInfo, nvml.Return) {
		return gi.GetComputeInstanceProfileInfo(computeProfile(info.SliceCount), nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
	})
	if ret != nvml.SUCCESS {
		return nil, errors.Errorf("cannot read the compute profile of %d slices: NVML error %d", info.SliceCount, int(ret))
	}
	ci, ret := getArg(gi.CreateComputeInstance, &ciInfo)
	if ret != nvml.SUCCESS {
		return nil, errors.Errorf("cannot create the compute instance: NVML error %d", int(ret))
	}
	return ci, nil
}

// firstCompute returns the GPU instance's compute instance covering it, nil when it has none.
func firstCompute(gi nvml.GpuInstance, info nvml.GpuInstanceProfileInfo) nvml.ComputeInstance {
	ciInfo, ret := get(func() (nvml.ComputeInstanceProfileInfo, nvml.Return) {
		return gi.GetComputeInstanceProfileInfo(computeProfile(info.SliceCount), nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
	})
	if ret != nvml.SUCCESS {
		return nil
	}
	cis, ret := getArg(gi.GetComputeInstances, &ciInfo)
	if ret != nvml.SUCCESS || len(cis) == 0 {
		return nil
	}
	sort.Slice(cis, func(i, j int) bool { return computeID(cis[i]) < computeID(cis[j]) })
	return cis[0]
}

func gpuID(gi nvml.GpuInstance) uint32 {
	info, _ := get(gi.GetInfo)
	return info.Id
}

func computeID(ci nvml.ComputeInstance) uint32 {
	info, _ := get(ci.GetInfo)
	return info.Id
}

// profileName names a GPU-instance profile as Detect does: the product table's name, or from its memory.
func profileName(info nvml.GpuInstanceProfileInfo, product string) string {
	known, _ := ProductProfiles(product)
	for _, k := range known {
		if k.ComputeSlices == int32(info.SliceCount) && k.Count == int32(info.InstanceCount) {
			return k.Name
		}
	}
	return strconv.Itoa(int(info.SliceCount)) + "g." + strconv.FormatInt((int64(info.MemorySizeMB)+512)/1024, 10) + "gb"
}
