// Package settings reads the operator's settings: Setting objects in gpustack-system, seeded from their
// built-in defaults and, at start-up, overridden by the gpustack-settings Secret when it exists.
package settings

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	settingsv1 "github.com/gpustack/gpustack-operator/apis/settings/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/functions/xrs"
)

// SecretName is the Secret whose data keys seed and override the settings at start-up.
const SecretName = "gpustack-settings"

// Values are the effective value of every setting.
type Values map[string]string

// Defaults returns every setting at its built-in default.
func Defaults() Values {
	v := Values{}
	for _, d := range workerv1.SettingDefinitions {
		v[d.Name] = d.Default
	}
	return v
}

// Parse returns the defaults overridden by the given values, refusing unknown names, non-boolean values of
// boolean settings, values of duration settings that are no duration and a container-registry-auth that is
// no <username>:<password>.
func Parse(overrides map[string]string) (Values, error) {
	v := Defaults()
	names := make([]string, 0, len(overrides))
	for n := range overrides {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := v.set(n, overrides[n]); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func (v Values) set(name, value string) error {
	d, ok := workerv1.LookupSetting(name)
	if !ok {
		return errors.Errorf("unknown setting %q", name)
	}
	value = strings.TrimSpace(value)
	if value == "" {
		value = d.Default
	}
	if d.Kind == workerv1.SettingBool && value != "true" && value != "false" {
		return errors.Errorf("setting %s: %q is not true or false", name, value)
	}
	if d.Kind == workerv1.SettingDuration {
		if dur, err := time.ParseDuration(value); err != nil || dur < 0 {
			return errors.Errorf("setting %s: %q is not a duration such as 90s, 5m or 1h30m", name, value)
		}
	}
	if name == workerv1.SettingContainerRegistryAuth && value != "" {
		// The refusal never quotes the value, a credential: it reaches logs, events and API answers.
		if _, _, err := workerv1.SplitRegistryAuth(value); err != nil {
			return errors.Wrapf(err, "setting %s", name)
		}
	}
	v[name] = value
	return nil
}

// Bool returns a boolean setting.
func (v Values) Bool(name string) bool { return v[name] == "true" }

// Duration returns a duration setting; 0 for one that does not parse, which set never lets in.
func (v Values) Duration(name string) time.Duration {
	d, _ := time.ParseDuration(v[name])
	return d
}

// Functions returns the settings the composition functions read.
func (v Values) Functions() xrs.FunctionSettings {
	return xrs.FunctionSettings{
		MixedOnNode:          v.Bool(workerv1.SettingInstanceTypeMixedOnNode),
		AwareCPUManufacturer: v.Bool(workerv1.SettingInstanceTypeAwareCPUManufacturer),
		DerivedFromNode:      v.Bool(workerv1.SettingInstanceTypeDerivedFromNode),
		DrainWhenNoFlavors:   v.Bool(workerv1.SettingInstanceTypeDrainWhenNoFlavors),
		DrainGracePeriod:     metav1.Duration{Duration: v.Duration(workerv1.SettingInstanceTypeDrainGracePeriod)},
	}
}

// Load reads the Setting objects of gpustack-system. A missing Setting has its default; a Setting whose value
// is invalid keeps the default and is reported in the returned problems, so one bad value never stops the
// operator.
func Load(ctx context.Context, c client.Reader) (Values, []string, error) {
	list := &workerv1.SettingList{}
	// Read, never changed: the per-card check loads the settings for every verdict, without copying them.
	if err := c.List(ctx, list, client.InNamespace(workerv1.SystemNamespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, errors.Wrap(err, "cannot list settings")
	}
	v := Defaults()
	var problems []string
	for _, s := range list.Items {
		if err := v.set(s.Name, s.Spec.Value); err != nil {
			problems = append(problems, fmt.Sprintf("Setting %s/%s: %v; using the default", s.Namespace, s.Name, err))
		}
	}
	return v, problems, nil
}

// EnvName is the worker's environment variable that seeds a setting: GPUSTACK_ and its name in upper snake
// case (workload-fit-affinity: GPUSTACK_WORKLOAD_FIT_AFFINITY).
func EnvName(setting string) string {
	return "GPUSTACK_" + strings.ToUpper(strings.ReplaceAll(setting, "-", "_"))
}

// envSeeds returns the value each setting's variable (EnvName, read through getenv) seeds a Setting created
// now with; a value the setting would refuse is left out and reported, the Setting then starting at its
// default.
func envSeeds(getenv func(string) string) (map[string]string, []string) {
	seeds := map[string]string{}
	var problems []string
	for _, d := range workerv1.SettingDefinitions {
		v := strings.TrimSpace(getenv(EnvName(d.Name)))
		if v == "" {
			continue
		}
		if err := Defaults().set(d.Name, v); err != nil {
			// The problem is logged: a credential's value is not.
			problems = append(problems, fmt.Sprintf("%s=%s: %v; Setting %s starts at its default", EnvName(d.Name), Shown(d, v), err, d.Name))
			continue
		}
		seeds[d.Name] = v
	}
	return seeds, problems
}

// Ensure creates every missing Setting, copies the gpustack-settings Secret's values onto them, and keeps
// each Setting's status (effective value, default, description) current; then it writes the effective values
// back to the Secret, creating it when missing. A Setting it creates starts at the value of the worker's
// variable EnvName(setting), read through getenv, when it has one (the Secret's still wins). It runs when the
// worker starts: patching the Secret and restarting the worker changes a setting, as does patching the
// Setting itself at any time (SyncSecret keeps the Secret in step, so a restart never reverts it).
//
// A Setting the API server refuses as invalid (a CRD older than this binary, as Helm leaves them on upgrade
// until an administrator applies the new ones; a Secret's value the CRD's rules refuse) is left as it is and
// the worker goes on: the returned problems name each. Any other failure is an error.
func Ensure(ctx context.Context, c client.Client, getenv func(string) string) ([]string, error) {
	secret := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: SecretName}, secret)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, errors.Wrap(err, "cannot get the gpustack-settings Secret")
	}
	seeds, problems := envSeeds(getenv)
	for _, d := range workerv1.SettingDefinitions {
		// Another writer (a second worker, the status controller) may update the Setting meanwhile.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return ensureOne(ctx, c, secret, d, seeds[d.Name]) })
		if apierrors.IsInvalid(err) {
			problems = append(problems, err.Error())
			continue
		}
		if err != nil {
			return nil, err
		}
	}
	values, _, err := Load(ctx, c)
	if err != nil {
		return nil, err
	}
	return problems, SyncSecret(ctx, c, values)
}

// ensureOne creates one Setting when missing, at seed, copies the Secret's value onto it and refreshes its
// status.
func ensureOne(ctx context.Context, c client.Client, secret *corev1.Secret, d workerv1.SettingDefinition, seed string) error {
	s := &workerv1.Setting{}
	err := c.Get(ctx, client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: d.Name}, s)
	if apierrors.IsNotFound(err) {
		s = &workerv1.Setting{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: d.Name},
			Spec: workerv1.SettingSpec{Value: seed}}
		err := c.Create(ctx, s)
		if apierrors.IsInvalid(err) {
			return errors.Wrapf(err, "cannot create Setting %s, which a Setting CRD older than this worker refuses "+
				"(kubectl apply --server-side --force-conflicts -f package/crds); the worker uses its default %q", d.Name, d.Default)
		}
		if err != nil {
			return errors.Wrapf(err, "cannot create Setting %s", d.Name)
		}
	} else if err != nil {
		return errors.Wrapf(err, "cannot get Setting %s", d.Name)
	}
	// The Secret seeds a Setting, and an administrator who edits the Secret and restarts the worker gets the
	// value; but a Setting edited while the worker was down (its spec no longer what its status last took in)
	// is newer than the Secret, and keeps its value: SyncSecret then writes it into the Secret.
	if v, ok := secret.Data[d.Name]; ok && strings.TrimSpace(string(v)) != s.Spec.Value && !editedSinceSync(s, d) {
		s.Spec.Value = strings.TrimSpace(string(v))
		if err := c.Update(ctx, s); err != nil {
			return errors.Wrapf(err, "cannot copy the gpustack-settings Secret's %s onto its Setting", d.Name)
		}
	}
	return updateStatus(ctx, c, s, d)
}

// SyncSecret writes the given values into the gpustack-settings Secret, creating it when missing, and writes
// nothing when it already holds them. Keys not given are left as they are, so a change to one Setting never
// reverts an administrator's edit of another key of the Secret.
func SyncSecret(ctx context.Context, c client.Client, values Values) error {
	secret := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: SecretName}, secret)
	if apierrors.IsNotFound(err) {
		secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: SecretName}}
		for k, v := range values {
			if secret.Data == nil {
				secret.Data = map[string][]byte{}
			}
			secret.Data[k] = []byte(v)
		}
		return errors.Wrap(c.Create(ctx, secret), "cannot create the gpustack-settings Secret")
	}
	if err != nil {
		return errors.Wrap(err, "cannot get the gpustack-settings Secret")
	}
	changed := false
	for k, v := range values {
		if string(secret.Data[k]) != v {
			if secret.Data == nil {
				secret.Data = map[string][]byte{}
			}
			secret.Data[k], changed = []byte(v), true
		}
	}
	if !changed {
		return nil
	}
	return errors.Wrap(c.Update(ctx, secret), "cannot update the gpustack-settings Secret")
}

// editedSinceSync reports whether a Setting's value changed after its status last took it in.
func editedSinceSync(s *workerv1.Setting, d workerv1.SettingDefinition) bool {
	return s.Status.Value != "" && Effective(s.Spec.Value, d) != s.Status.Value
}

// Check returns why value cannot be the named setting's value, or nil: an unknown setting, a boolean that is not
// "true" or "false", a duration that does not parse, a container-registry-auth that is no
// <username>:<password> with a username. "" is the default, always valid. The reason quotes no sensitive
// value.
func Check(name, value string) error { return Defaults().set(name, value) }

// Shown is how a setting's value may be shown in a log line or an event: quoted, or (sensitive) for a
// sensitive setting, as the settings API reads it back.
func Shown(d workerv1.SettingDefinition, value string) string {
	if d.IsSensitive() {
		return settingsv1.SensitiveValue
	}
	return strconv.Quote(value)
}

// Effective is the value a Setting's spec puts in effect: the default when it is empty or invalid.
func Effective(value string, d workerv1.SettingDefinition) string {
	v := Defaults()
	if err := v.set(d.Name, value); err != nil {
		return d.Default
	}
	return v[d.Name]
}

// updateStatus writes a Setting's status when it changed.
func updateStatus(ctx context.Context, c client.Client, s *workerv1.Setting, d workerv1.SettingDefinition) error {
	want := workerv1.SettingStatus{Value: Effective(s.Spec.Value, d), Default: d.Default, Description: d.Description,
		Editable: true, Sensitive: d.IsSensitive()}
	if s.Status == want {
		return nil
	}
	s.Status = want
	return errors.Wrapf(c.Status().Update(ctx, s), "cannot update the status of Setting %s", d.Name)
}

// UpdateStatus refreshes the status of one Setting after its value changed.
func UpdateStatus(ctx context.Context, c client.Client, s *workerv1.Setting) error {
	d, ok := workerv1.LookupSetting(s.Name)
	if !ok {
		return nil
	}
	return updateStatus(ctx, c, s, d)
}
