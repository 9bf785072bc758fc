package v1

import (
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// SettingKind is the type of a setting's value.
type SettingKind string

const (
	// SettingBool is a "true" or "false" setting.
	SettingBool SettingKind = "bool"
	// SettingString is a free-form setting.
	SettingString SettingKind = "string"
	// SettingDuration is a duration as Go writes one ("90s", "5m", "1h30m"), not negative.
	SettingDuration SettingKind = "duration"
	// SettingSensitive is a free-form setting whose value is never shown (a credential): the settings API reads
	// it back as (sensitive).
	SettingSensitive SettingKind = "sensitive"
)

// The names of the settings the operator reads.
const (
	SettingNodeManagementManual             = "node-management-manual"
	SettingInstanceTypeMixedOnNode          = "instance-type-mixed-on-node"
	SettingInstanceTypeDerivedFromNode      = "instance-type-derived-from-node"
	SettingInstanceTypeDrainWhenNoFlavors   = "instance-type-drain-when-no-flavors"
	SettingInstanceTypeDrainGracePeriod     = "instance-type-drain-grace-period"
	SettingInstanceTypeAwareCPUManufacturer = "instance-type-aware-cpu-manufacturer"
	SettingInstanceGeneralOvercommit        = "instance-general-resources-overcommit"
	SettingInstancePrivilegedAllowed        = "instance-privileged-allowed"
	SettingInstanceHostPathVolumeAllowed    = "instance-host-path-volume-allowed"
	SettingInstancePersistentVolumePlace    = "instance-persistent-volume-placement"
	SettingInstanceSSHServerImage           = "instance-ssh-server-image"
	SettingInstanceAccessStaticAddress      = "instance-access-static-address"
	SettingInstanceAccessWildcardDNS        = "instance-access-wildcard-dns"
	SettingWorkloadFitAffinity              = "workload-fit-affinity"
	SettingContainerRegistry                = "container-registry"
	SettingContainerNamespace               = "container-namespace"
	SettingImagePullSecrets                 = "image-pull-secrets"
	SettingImagePullPolicy                  = "image-pull-policy"
	SettingContainerRegistryAuth            = "container-registry-auth"
)

// SettingDefinition is one setting's built-in default and meaning.
type SettingDefinition struct {
	// Name is the setting's name, also the Setting object's name.
	Name string
	// Kind is the type of the value.
	Kind SettingKind
	// Default is the value when nobody set one.
	Default string
	// Description says what the setting does.
	Description string
}

// SettingDefinitions are every setting the operator knows, in the order docs/settings.md lists them. The Setting
// CRD's name rule lists the same names; a test keeps the two in step.
var SettingDefinitions = []SettingDefinition{
	{SettingNodeManagementManual, SettingBool, "false", "true: an administrator must label nodes gpustack.ai/managed=true by hand"},
	{SettingInstanceTypeMixedOnNode, SettingBool, "true", "true: one node feeds both an accelerated and a CPU pool; false: accelerated nodes feed only accelerated pools"},
	{SettingInstanceTypeDerivedFromNode, SettingBool, "true", "the operator creates InstanceTypes derived from the nodes (create-only) and gates accelerated queues with the gpustack-node-devices check"},
	{SettingInstanceTypeDrainWhenNoFlavors, SettingBool, "true", "drain a queue (HoldAndDrain) before emptying the resource groups of a pool that lost all its flavors"},
	{SettingInstanceTypeDrainGracePeriod, SettingDuration, "5m", "how long a pool with no flavors left is held (new work waits) before its queue drains what runs; flavors back within it drain nothing"},
	{SettingInstanceTypeAwareCPUManufacturer, SettingBool, "false", "split pools, queues and the catalog by CPU key; ResourceFlavors never change"},
	{SettingInstanceGeneralOvercommit, SettingBool, "true", "the unit resources become limits and Instances request less"},
	{SettingInstancePrivilegedAllowed, SettingBool, "false", "allow new Instances to take spec.privileged"},
	{SettingInstanceHostPathVolumeAllowed, SettingBool, "false", "allow new Instances to take an additionalVolumes[].hostPath"},
	{SettingInstancePersistentVolumePlace, SettingBool, "true", "persistent claims decide where an Instance lands; an unbound claim holds its Pod"},
	{SettingInstanceSSHServerImage, SettingString, "gpustack/ssh-server:v1.3.0", "image of the Instance SSH sidecar"},
	{SettingInstanceAccessStaticAddress, SettingString, "", "a fixed address Instances are reached at"},
	{SettingInstanceAccessWildcardDNS, SettingString, "", "a wildcard DNS suffix: Instances are reached at <host-ip>.<suffix>"},
	{SettingWorkloadFitAffinity, SettingBool, "true", "pin pending Workloads to nodes whose cards can fit them"},
	{SettingContainerRegistry, SettingString, "", "registry that built-in images are pulled from"},
	{SettingContainerNamespace, SettingString, "", "registry namespace that built-in images are pulled from"},
	{SettingImagePullSecrets, SettingString, "", "comma-separated Secrets used to pull built-in images"},
	{SettingImagePullPolicy, SettingString, "IfNotPresent", "pull policy of built-in images"},
	{SettingContainerRegistryAuth, SettingSensitive, "", "username:password for the registry the built-in images are pulled from; the worker makes each Instance a pull Secret of it"},
}

// IsSensitive reports whether the setting's value is never shown.
func (d SettingDefinition) IsSensitive() bool { return d.Kind == SettingSensitive }

// LookupSetting returns the definition of the named setting.
func LookupSetting(name string) (SettingDefinition, bool) {
	for _, d := range SettingDefinitions {
		if d.Name == name {
			return d, true
		}
	}
	return SettingDefinition{}, false
}

// errRegistryAuth is why a container-registry-auth value is refused. It never quotes the value: the value is
// a credential, and the message reaches logs, events and API answers.
var errRegistryAuth = errors.New("want <username>:<password> with a non-empty username (the value is a credential and is not shown)")

// SplitRegistryAuth splits a container-registry-auth value, <username>:<password>, at its first colon, as
// Docker's auth field is split (a password may hold colons). The username must not be empty.
func SplitRegistryAuth(auth string) (username, password string, err error) {
	username, password, ok := strings.Cut(auth, ":")
	if !ok || username == "" {
		return "", "", errRegistryAuth
	}
	return username, password, nil
}
