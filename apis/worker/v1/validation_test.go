package v1_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// TestValidation runs the Ginkgo suite of the CRDs' validation on a real kube-apiserver (the integration tier).
func TestValidation(t *testing.T) { testenv.RunSuite(t, "CRD validation suite", &suite) }

var suite testenv.EnvtestSuite

// The cases' namespaced objects live in default, which the API server creates a moment after it starts.
var _ = BeforeEach(func() {
	Expect(suite.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})).
		To(Or(Succeed(), WithTransform(apierrors.IsAlreadyExists, BeTrue())))
})

// mutation changes an object that has been created; nil means the case only creates.
type mutation func(client.Object)

// Each case sends one object to the API server, and expects it accepted or refused with the error fragments
// that name the field.
var _ = Describe("the CRDs' validation", func() {
	type args struct {
		obj    client.Object
		update mutation
	}
	type want struct {
		// errs are substrings of the API server's answer; none means the request is accepted.
		errs []string
		// hidden are substrings the answer must not hold (a credential it must not quote).
		hidden []string
	}
	a10g := func(name string) *builders.InstanceTypeWrapper {
		return builders.MakeInstanceType(name).Accelerated("nvidia-a10g").Unit("12", "128Gi").LocalStorage("200Gi")
	}
	inst := func(name string) *builders.InstanceWrapper {
		return builders.MakeInstance("default", name, "gpustack--nvidia-a10g-linux-amd64")
	}
	setting := func(name, value string) *workerv1.Setting {
		return &workerv1.Setting{ObjectMeta: metav1.ObjectMeta{Namespace: "gpustack-system", Name: name},
			Spec: workerv1.SettingSpec{Value: value}}
	}
	ipv := func(name, capacity string, mode workerv1.PersistentAccessMode) *workerv1.InstancePersistentVolume {
		return &workerv1.InstancePersistentVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: workerv1.InstancePersistentVolumeSpec{Capacity: resource.MustParse(capacity), AccessMode: mode}}
	}
	devices := func(name string, memory int64, manufacturer string) *workerv1.Devices {
		return &workerv1.Devices{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: workerv1.DevicesSpec{
			Groups: []workerv1.DeviceGroup{{ID: "a10g", Manufacturer: manufacturer, Memory: memory,
				Accelerators: []workerv1.Accelerator{{ID: "GPU-0", Index: 0}}}}}}
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"InstanceTypeAuthored": {
			reason: "The walkthrough's a10g-12c128g is accepted.",
			args:   args{obj: a10g("it-authored").Obj()},
		},
		"InstanceTypeCPU": {
			reason: "A CPU type with a 1-core unit is accepted.",
			args:   args{obj: builders.MakeInstanceType("it-cpu").Obj()},
		},
		"InstanceTypeMissingAcceleratorGroup": {
			reason: "An accelerated type must name its accelerator group.",
			args:   args{obj: a10g("it-no-group").Accelerated("").Obj()},
			want:   want{errs: []string{"spec.acceleratorGroup", "acceleratorGroup is required when acceleratable is true"}},
		},
		"InstanceTypeCPUWithAcceleratorGroup": {
			reason: "A CPU type cannot name an accelerator group.",
			args: args{obj: func() client.Object {
				o := builders.MakeInstanceType("it-cpu-group").Obj()
				o.Spec.AcceleratorGroup = "nvidia-a10g"
				return o
			}()},
			want: want{errs: []string{"spec.acceleratorGroup", "must be empty when acceleratable is false"}},
		},
		"InstanceTypeCPUUnitTwo": {
			reason: "A CPU type's unit is exactly one core.",
			args:   args{obj: builders.MakeInstanceType("it-cpu-two").Unit("2", "4Gi").Obj()},
			want:   want{errs: []string{"spec.unitResources.cpu", "exactly 1"}},
		},
		"InstanceTypeFractionalCPU": {
			reason: "A unit has a whole number of cores.",
			args:   args{obj: a10g("it-fraction").Unit("1500m", "8Gi").Obj()},
			want:   want{errs: []string{"spec.unitResources.cpu", "positive whole number of cores"}},
		},
		"InstanceTypeZeroRAM": {
			reason: "A unit has memory.",
			args:   args{obj: a10g("it-zero-ram").Unit("8", "0").Obj()},
			want:   want{errs: []string{"spec.unitResources.ram", "ram must be positive"}},
		},
		"InstanceTypeStorageNotGi": {
			reason: "localStorage is given in Gi.",
			args:   args{obj: a10g("it-storage").LocalStorage("100G").Obj()},
			want:   want{errs: []string{"spec.localStorage", "must be a positive quantity in Gi"}},
		},
		"InstanceTypeMissingOS": {
			reason: "os is required.",
			args:   args{obj: a10g("it-no-os").Platform("", "amd64").Obj()},
			want:   want{errs: []string{"spec.os"}},
		},
		"InstanceTypeLongDisplayName": {
			reason: "displayName has at most 64 characters.",
			args:   args{obj: a10g("it-long-name").DisplayName(strings.Repeat("x", 65)).Obj()},
			want:   want{errs: []string{"spec.displayName", "may not be more than 64"}},
		},
		"InstanceTypeBadGroup": {
			reason: "acceleratorGroup is a label-safe key.",
			args:   args{obj: a10g("it-bad-group").Accelerated("NVIDIA A10G").Obj()},
			want:   want{errs: []string{"spec.acceleratorGroup"}},
		},
		"InstanceTypeResize": {
			reason: "Sizes are immutable.",
			args: args{obj: a10g("it-resize").Obj(), update: func(o client.Object) {
				o.(*workerv1.InstanceType).Spec.UnitResources.RAM = resource.MustParse("256Gi")
			}},
			want: want{errs: []string{"spec.unitResources", "unitResources is immutable"}},
		},
		"InstanceTypeRegroup": {
			reason: "The accelerator group is immutable.",
			args: args{obj: a10g("it-regroup").Obj(), update: func(o client.Object) {
				o.(*workerv1.InstanceType).Spec.AcceleratorGroup = "nvidia-tesla-t4"
			}},
			want: want{errs: []string{"spec.acceleratorGroup", "acceleratorGroup is immutable"}},
		},
		"InstanceTypeRename": {
			reason: "displayName and inactive may change.",
			args: args{obj: a10g("it-rename").Obj(), update: func(o client.Object) {
				o.(*workerv1.InstanceType).Spec.DisplayName = "A10G, large"
				o.(*workerv1.InstanceType).Spec.Inactive = true
			}},
		},
		"InstancePinned": {
			reason: "The walkthrough's pinned-demo with its three additional volumes is accepted.",
			args: args{obj: func() client.Object {
				cm := builders.ConfigMapVolume("/etc/model/config.json", "model-config")
				cm.SubPath, cm.ReadOnly = "config.json", true
				return inst("pinned-demo").NodeName("node-t4-b").Accelerators(1).VolumeMount("/workspace").
					Volume(builders.PersistentVolume("/mnt/datasets", "datasets")).Volume(cm).
					Volume(builders.HostPathVolume("/mnt/host-cache", "/var/lib/gpustack-cache")).Obj()
			}()},
		},
		"InstanceTwoWorkspaces": {
			reason: "The workspace is ephemeral or persistent, not both.",
			args: args{obj: func() client.Object {
				o := inst("two-workspaces").Obj()
				o.Spec.Volume.Persistent = &workerv1.PersistentVolumeReference{Name: "ws"}
				return o
			}()},
			want: want{errs: []string{"spec.volume", "exactly one of ephemeral or persistent"}},
		},
		"InstanceNoWorkspace": {
			reason: "The workspace must be given.",
			args: args{obj: func() client.Object {
				o := inst("no-workspace").Obj()
				o.Spec.Volume = workerv1.InstanceVolume{}
				return o
			}()},
			want: want{errs: []string{"spec.volume", "exactly one of ephemeral or persistent"}},
		},
		"InstanceVolumeTwoSources": {
			reason: "An additional volume has exactly one source.",
			args: args{obj: func() client.Object {
				v := builders.ConfigMapVolume("/etc/x", "cm")
				v.Secret = &workerv1.ObjectReference{Name: "s"}
				return inst("two-sources").Volume(v).Obj()
			}()},
			want: want{errs: []string{"spec.additionalVolumes[0]", "exactly one of persistent, configMap, secret or hostPath"}},
		},
		"InstanceVolumeRelativePath": {
			reason: "A mount path is absolute.",
			args:   args{obj: inst("relative-path").Volume(builders.PersistentVolume("mnt/data", "d")).Obj()},
			want:   want{errs: []string{"spec.additionalVolumes[0].mountPath", "mountPath must be an absolute path"}},
		},
		"InstanceVolumeNonCanonicalPath": {
			reason: "A mount path is canonical.",
			args:   args{obj: inst("dotdot-path").Volume(builders.PersistentVolume("/mnt/../etc", "d")).Obj()},
			want:   want{errs: []string{"spec.additionalVolumes[0].mountPath", "mountPath must be canonical"}},
		},
		"InstanceVolumeDuplicatePath": {
			reason: "Two volumes cannot share a mount path.",
			args: args{obj: inst("duplicate-path").Volume(builders.PersistentVolume("/mnt/data", "a")).
				Volume(builders.ConfigMapVolume("/mnt/data", "b")).Obj()},
			want: want{errs: []string{"spec.additionalVolumes[1]", "Duplicate value"}},
		},
		"InstanceVolumeOnWorkspace": {
			reason: "An additional volume cannot sit on the workspace's mount path.",
			args:   args{obj: inst("on-workspace").Volume(builders.PersistentVolume("/workspace", "a")).Obj()},
			want:   want{errs: []string{"spec.additionalVolumes", "must differ from spec.volumeMount"}},
		},
		"InstanceVolumeEscapingSubPath": {
			reason: "A subPath cannot climb out of its volume.",
			args: args{obj: func() client.Object {
				v := builders.ConfigMapVolume("/etc/x", "cm")
				v.SubPath = "a/../../etc"
				return inst("escaping-subpath").Volume(v).Obj()
			}()},
			want: want{errs: []string{"spec.additionalVolumes[0].subPath", "must not contain '..'"}},
		},
		"InstanceSliceOver100": {
			reason: "A slice is at most 100 % of a card.",
			args:   args{obj: inst("slice-101").Slice(101, 100).Obj()},
			want:   want{errs: []string{"spec.resources.acceleratorSlicedMemoryPercentage"}},
		},
		"InstanceSliceAndPartition": {
			reason: "A partition and a slice percentage are mutually exclusive.",
			args: args{obj: func() client.Object {
				o := inst("slice-and-partition").Partition("3g.40gb").Obj()
				o.Spec.Resources.AcceleratorSlicedMemoryPercentage = ptr(20)
				return o
			}()},
			want: want{errs: []string{"spec.resources.acceleratorPartitionedProfile", "mutually exclusive"}},
		},
		"InstanceSliceOfTwo": {
			reason: "A slice is always one accelerator.",
			args:   args{obj: inst("slice-of-two").Slice(20, 100).Accelerators(2).Obj()},
			want:   want{errs: []string{"spec.resources.accelerator", "accelerator must be 1"}},
		},
		"InstanceAcceleratorAsString": {
			reason: "The seed writes accelerator: \"1\"; a string of digits is a count like a number.",
			args: args{obj: func() client.Object {
				o := inst("slice-as-string").Slice(20, 100).Obj()
				o.Spec.Resources.Accelerator = &intstr.IntOrString{Type: intstr.String, StrVal: "1"}
				return o
			}()},
		},
		"InstanceAcceleratorNotANumber": {
			reason: "An accelerator count that is not a whole number is refused.",
			args: args{obj: func() client.Object {
				o := inst("accelerator-many").Obj()
				o.Spec.Resources.Accelerator = &intstr.IntOrString{Type: intstr.String, StrVal: "many"}
				return o
			}()},
			want: want{errs: []string{"spec.resources.accelerator", "whole number from 0 to 1024"}},
		},
		"InstanceSliceOfTwoAsString": {
			reason: "A slice of \"2\" accelerators is refused as a slice of 2 is.",
			args: args{obj: func() client.Object {
				o := inst("slice-of-two-string").Slice(20, 100).Obj()
				o.Spec.Resources.Accelerator = &intstr.IntOrString{Type: intstr.String, StrVal: "2"}
				return o
			}()},
			want: want{errs: []string{"spec.resources.accelerator", "accelerator must be 1"}},
		},
		"InstanceLongPortName": {
			reason: "A port name has at most 16 characters.",
			args:   args{obj: inst("long-port").Port(8080, "a-very-long-port-name").Obj()},
			want:   want{errs: []string{"spec.ports[0].name"}},
		},
		"InstanceRunningChangeImage": {
			reason: "A running Instance's image is immutable.",
			args: args{obj: inst("running-image").Obj(), update: func(o client.Object) {
				o.(*workerv1.Instance).Spec.Image = "ubuntu:26.04"
			}},
			want: want{errs: []string{"spec.image", "image is immutable while the instance runs"}},
		},
		"InstanceRunningChangeVolumes": {
			reason: "A running Instance's additional volumes are immutable.",
			args: args{obj: inst("running-volumes").Obj(), update: func(o client.Object) {
				o.(*workerv1.Instance).Spec.AdditionalVolumes = []workerv1.AdditionalVolume{builders.PersistentVolume("/mnt/d", "d")}
			}},
			want: want{errs: []string{"spec.additionalVolumes", "immutable while the instance runs"}},
		},
		"InstanceStop": {
			reason: "A running Instance may be stopped.",
			args: args{obj: inst("stop").Obj(), update: func(o client.Object) {
				o.(*workerv1.Instance).Spec.Stop = true
			}},
		},
		"InstanceStoppedRetype": {
			reason: "A stopped Instance may change type and start again in one patch (Step 5).",
			args: args{obj: inst("stopped-retype").Stopped(true).Obj(), update: func(o client.Object) {
				o.(*workerv1.Instance).Spec.Type = "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64"
				o.(*workerv1.Instance).Spec.Stop = false
			}},
		},
		"InstanceStoppedChangeWorkspace": {
			reason: "The workspace volume never changes, even while stopped.",
			args: args{obj: inst("stopped-workspace").Stopped(true).Obj(), update: func(o client.Object) {
				o.(*workerv1.Instance).Spec.Volume.Ephemeral.Capacity = resource.MustParse("2Gi")
			}},
			want: want{errs: []string{"spec.volume", "volume is immutable"}},
		},
		"SettingKnown": {
			reason: "A known setting with a boolean value is accepted.",
			args:   args{obj: setting("instance-privileged-allowed", "true")},
		},
		"SettingUnknown": {
			reason: "An unknown setting is refused.",
			args:   args{obj: setting("instance-gpu-turbo", "true")},
			want:   want{errs: []string{"metadata.name must be a known setting"}},
		},
		"SettingNotBoolean": {
			reason: "A boolean setting takes true or false.",
			args:   args{obj: setting("instance-host-path-volume-allowed", "yes")},
			want:   want{errs: []string{"spec.value", `must be "true" or "false"`}},
		},
		"SettingDuration": {
			reason: "A duration setting takes a duration as Go writes one.",
			args:   args{obj: setting("instance-type-drain-grace-period", "1h30m")},
		},
		"SettingDurationZero": {
			reason: "A duration setting may be 0.",
			args:   args{obj: setting("instance-type-drain-grace-period", "0")},
		},
		"SettingNotDuration": {
			reason: "A duration setting refuses what is no duration, such as a bare number of seconds.",
			args:   args{obj: setting("instance-type-drain-grace-period", "300")},
			want:   want{errs: []string{"spec.value", "must be a duration such as 90s, 5m or 1h30m"}},
		},
		"SettingRegistryAuth": {
			reason: "container-registry-auth takes <username>:<password>; the password may hold colons.",
			args:   args{obj: setting("container-registry-auth", "robot:pa:ss")},
		},
		"SettingRegistryAuthNoColon": {
			reason: "container-registry-auth refuses a value without a colon, and the answer does not quote it.",
			args:   args{obj: setting("container-registry-auth", "s3cret-token")},
			want: want{errs: []string{"spec.value", "must be <username>:<password> with a non-empty username"},
				hidden: []string{"s3cret-token"}},
		},
		"SettingRegistryAuthNoUsername": {
			reason: "container-registry-auth refuses a value with no username, spaces around it or not.",
			args:   args{obj: setting("container-registry-auth", " :s3cret")},
			want: want{errs: []string{"spec.value", "must be <username>:<password> with a non-empty username"},
				hidden: []string{"s3cret"}},
		},
		"PersistentVolumeShrink": {
			reason: "A persistent volume may grow, never shrink.",
			args: args{obj: ipv("shrink", "10Gi", workerv1.ReadWriteOnce), update: func(o client.Object) {
				o.(*workerv1.InstancePersistentVolume).Spec.Capacity = resource.MustParse("5Gi")
			}},
			want: want{errs: []string{"spec.capacity", "capacity may not shrink"}},
		},
		"PersistentVolumeBadMode": {
			reason: "The access mode is one of RWO, RWX, ROX and RWOP.",
			args:   args{obj: ipv("bad-mode", "10Gi", "ReadWriteOnce")},
			want:   want{errs: []string{"spec.accessMode", "Unsupported value"}},
		},
		"DevicesNegativeMemory": {
			reason: "A device group's memory is not negative.",
			args:   args{obj: devices("node-negative", -1, "nvidia")},
			want:   want{errs: []string{"spec.groups[0].memory"}},
		},
		"DevicesUnknownManufacturer": {
			reason: "A device group's manufacturer is one of the nine.",
			args:   args{obj: devices("node-unknown", 24576, "acme")},
			want:   want{errs: []string{"spec.groups[0].manufacturer", "Unsupported value"}},
		},
	}
	for name, tc := range cases {
		It(name+": "+tc.reason, func() {
			ctx := context.Background()
			obj := tc.args.obj
			DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), obj) })
			err := suite.Client.Create(ctx, obj)
			if tc.args.update != nil {
				Expect(err).NotTo(HaveOccurred(), "cannot create the object to update")
				tc.args.update(obj)
				err = suite.Client.Update(ctx, obj)
			}
			check(tc.want.errs, err)
			for _, h := range tc.want.hidden {
				Expect(err.Error()).NotTo(ContainSubstring(h), "the answer quotes the credential")
			}
		})
	}
})

// check compares the API server's answer with the expected error fragments.
func check(want []string, err error) {
	GinkgoHelper()
	if len(want) == 0 {
		Expect(err).NotTo(HaveOccurred(), "want the request accepted")
		return
	}
	Expect(err).To(HaveOccurred(), "want the request refused with %q, it was accepted", want)
	for _, w := range want {
		Expect(err.Error()).To(ContainSubstring(w))
	}
}

func ptr(i int32) *int32 { return &i }
