package deviceplugin

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/vendors"
)

// stageEnforcers puts (empty) enforcer files where the cards' enforcers are looked for under libDir, as the
// agent's copy of the enforcer image does on a node.
func stageEnforcers(t *testing.T, libDir string, cards ...providers.Device) {
	t.Helper()
	for _, c := range cards {
		e, ok := Enforcers[c.Manufacturer]
		if !ok {
			continue
		}
		dir := filepath.Join(libDir, e.Dir(c))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range e.Files() {
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestSliceFor(t *testing.T) {
	state, lib := t.TempDir(), t.TempDir()
	rt := Runtime{LibDir: lib, StateDir: state}
	card := func(mfr string, runtime string) providers.Device {
		return providers.Device{Manufacturer: mfr, UUID: mfr + "-0", Index: 2, MemoryMiB: 65536, RuntimeVersion: runtime}
	}
	stageEnforcers(t, lib, card("ascend", "8.0.RC3"), card("thead", ""), card("amd", "6.2"))
	half := Budget{MemoryMiB: 32768, CoresPercent: 30}
	type want struct {
		envs   map[string]string
		mounts []string
		err    string
	}
	cases := map[string]struct {
		reason string
		card   providers.Device
		budget Budget
		want   want
	}{
		"Ascend": {
			reason: "An Ascend slice runs vcann-rt's libvruntime.so with an npu_info.config naming the card and quotas.",
			card:   card("ascend", "8.0.RC3"), budget: half,
			want: want{envs: map[string]string{"ASCEND_VISIBLE_DEVICES": "2", "ENPU_LOG_LEVEL": "1", "ENPU_DSMI_HOOK": "1"},
				mounts: []string{lib + "/cann-8/libvruntime.so -> /usr/local/gpustack/lib/libvruntime.so",
					lib + "/cann-8/ld.so.preload -> /etc/ld.so.preload",
					filepath.Join(state, "k", "npu_info.config") + " -> /etc/gpustack/npu_info.config"}},
		},
		"THead": {
			reason: "A T-Head slice always carries the SM limit, and its memory limit and ledger directory, mounted where its path says.",
			card:   card("thead", ""), budget: Budget{MemoryMiB: 1024},
			want: want{envs: map[string]string{"PPU_VISIBLE_DEVICES": "2", "HGGC_DEVICE_SM_LIMIT": "100",
				"HGGC_DEVICE_MEMORY_LIMIT_0": "1024m", "HGGC_LEDGER_PATH": filepath.Join(state, "k"), "LIBHGGC_LOG_LEVEL": "1"},
				mounts: []string{lib + "/hggc/hggc_quota.so -> /usr/local/gpustack/lib/hggc_quota.so",
					lib + "/hggc/hgml_dlsym_hook.so -> /usr/local/gpustack/lib/hgml_dlsym_hook.so",
					lib + "/hggc/ld.so.preload -> /etc/ld.so.preload",
					filepath.Join(state, "k") + " -> " + filepath.Join(state, "k")}},
		},
		"AMD": {
			reason: "An AMD slice hides the card from the runtime and hands it to libvrocm.so, with its ledger directory mounted.",
			card:   card("amd", "6.2"), budget: half,
			want: want{envs: map[string]string{"AMD_VISIBLE_DEVICES": "none", "VROCM_DEVICE_MEMORY_LIMIT_0": "32768m",
				"VROCM_LEDGER_PATH": filepath.Join(state, "k")},
				mounts: []string{lib + "/rocm-6/libvrocm.so -> /usr/local/gpustack/lib/libvrocm.so", lib + "/rocm-6/ld.so.preload -> /etc/ld.so.preload",
					filepath.Join(state, "k") + " -> " + filepath.Join(state, "k")}},
		},
		"TooBig": {
			reason: "A slice larger than the card is refused.",
			card:   card("nvidia", "13.0"), budget: Budget{MemoryMiB: 70000},
			want: want{err: "does not fit"},
		},
		"NotOnNode": {
			reason: "A slice whose enforcer the node lacks (no enforcer image delivered CUDA 12's) is refused, not started unenforced.",
			card:   card("nvidia", "12.4"), budget: half,
			want: want{err: "the soft-slicing enforcer is not on this node"},
		},
		"NotYet": {
			reason: "A vendor whose enforcer the agent cannot drive yet says so rather than handing out an unlimited card.",
			card:   card("cambricon", ""), budget: half,
			want: want{err: "not supported by this agent yet"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp, err := rt.sliceFor(tc.card, tc.budget, "k")
			if tc.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want.err) {
					t.Errorf("%s\nsliceFor(...): error %v, want one containing %q", tc.reason, err, tc.want.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want.envs, resp.Envs); diff != "" {
				t.Errorf("%s\nsliceFor(...) envs: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.mounts, mounts(resp.Mounts)); diff != "" {
				t.Errorf("%s\nsliceFor(...) mounts: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	config, err := os.ReadFile(filepath.Join(state, "k", "npu_info.config"))
	wantConfig := "physical-npu-id=2\nvirtual-npu-id=0\naicore-quota=30\nmemory-quota=32768\nscheduling-policy=2\n"
	if err != nil || string(config) != wantConfig {
		t.Errorf("npu_info.config = %q, %v; want %q", config, err, wantConfig)
	}
}

// TestEnforcersCoverSlicedVendors checks that Allocate has an enforcer for exactly the vendors whose slices
// the admission rules let through (vendors.Vendor.SlicesPerCard): a slice of any other would be refused at
// create, and one of these without an enforcer would be an unlimited card.
func TestEnforcersCoverSlicedVendors(t *testing.T) {
	var want, got []string
	for _, v := range vendors.All() {
		if v.SlicesPerCard > 0 {
			want = append(want, v.Key)
		}
	}
	for vendor, e := range Enforcers {
		got = append(got, vendor)
		if e.Runtime == "" || len(e.Libraries) == 0 {
			t.Errorf("Enforcers[%q] = %+v: a runtime and at least one library", vendor, e)
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Enforcers: vendors with enforcers, -sliced vendors, +got:\n%s", diff)
	}
}
