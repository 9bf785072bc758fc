package settingsapi

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	settingsv1 "github.com/gpustack/gpustack-operator/apis/settings/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

func storedSetting(name, value string) *workerv1.Setting {
	return &workerv1.Setting{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: name, ResourceVersion: "7",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "gpustack-operator"}}}, Spec: workerv1.SettingSpec{Value: value}}
}

func wantView(name string, status settingsv1.SettingStatus) *settingsv1.Setting {
	return &settingsv1.Setting{TypeMeta: settingsv1.SettingTypeMeta(),
		ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: name, ResourceVersion: "7"}, Status: status}
}

func TestView(t *testing.T) {
	registryPassword := workerv1.SettingDefinition{Name: "registry-password", Kind: workerv1.SettingSensitive, Default: "changeme", Description: "a credential"}
	fitAffinity, _ := workerv1.LookupSetting(workerv1.SettingWorkloadFitAffinity)
	cases := map[string]struct {
		reason string
		stored *workerv1.Setting
		def    workerv1.SettingDefinition
		known  bool
		want   *settingsv1.Setting
	}{
		"Set": {
			reason: "A set value is in effect; the spec is never shown and managed fields stay the stored object's.",
			stored: storedSetting(workerv1.SettingWorkloadFitAffinity, "false"), def: fitAffinity, known: true,
			want: wantView(workerv1.SettingWorkloadFitAffinity, settingsv1.SettingStatus{Description: fitAffinity.Description,
				Editable: true, Value: "false", Default: "true"}),
		},
		"Unset": {
			reason: "An empty value is the default.",
			stored: storedSetting(workerv1.SettingWorkloadFitAffinity, ""), def: fitAffinity, known: true,
			want: wantView(workerv1.SettingWorkloadFitAffinity, settingsv1.SettingStatus{Description: fitAffinity.Description,
				Editable: true, Value: "true", Default: "true"}),
		},
		"Invalid": {
			reason: "A value the setting refuses (written past an older CRD) leaves the default in effect.",
			stored: storedSetting(workerv1.SettingWorkloadFitAffinity, "maybe"), def: fitAffinity, known: true,
			want: wantView(workerv1.SettingWorkloadFitAffinity, settingsv1.SettingStatus{Description: fitAffinity.Description,
				Editable: true, Value: "true", Default: "true"}),
		},
		"Sensitive": {
			reason: "A sensitive setting's value and default read back masked.",
			stored: storedSetting("registry-password", "s3cret"), def: registryPassword, known: true,
			want: wantView("registry-password", settingsv1.SettingStatus{Description: "a credential", Editable: true, Sensitive: true,
				Value: settingsv1.SensitiveValue, Default: settingsv1.SensitiveValue}),
		},
		"Unknown": {
			reason: "A stored object of no known setting (a watch bookmark) keeps only its metadata.",
			stored: storedSetting("", ""),
			want:   wantView("", settingsv1.SettingStatus{}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := view(tc.stored, tc.def, tc.known)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nview(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
