package instancepod

import (
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// Gates checks what an Instance takes across the node boundary against the administrator's settings, the rules
// the gpustack-instance-privileged-gate and gpustack-instance-host-path-gate policies also hold, so the worker
// holds them whatever policies are installed: spec.privileged needs instance-privileged-allowed, and each
// additionalVolumes[].hostPath needs instance-host-path-volume-allowed. Only taking counts: an update that keeps
// privileged mode, or a host path (compared by value) the Instance already had, passes whatever the settings
// say, so turning a setting off never strands an Instance. old is nil on create.
func Gates(inst, old *workerv1.Instance, privilegedAllowed, hostPathAllowed bool) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if inst.Spec.Privileged && !privilegedAllowed && (old == nil || !old.Spec.Privileged) {
		errs = append(errs, field.Forbidden(spec.Child("privileged"), privilegedForbidden))
	}
	if hostPathAllowed {
		return errs
	}
	for i, v := range inst.Spec.AdditionalVolumes {
		if v.HostPath != nil && !hadHostPath(old, v) {
			// The first one is enough to say what to do, as the policy says it.
			return append(errs, field.Forbidden(spec.Child("additionalVolumes").Index(i).Child("hostPath"), hostPathForbidden))
		}
	}
	return errs
}

// The gates' messages, as the policies word them.
const (
	privilegedForbidden = `privileged mode is not allowed: enable the "instance-privileged-allowed" setting to allow it`
	hostPathForbidden   = `host path volumes are not allowed: enable the "instance-host-path-volume-allowed" setting to allow it`
)

// PodGates holds the same gates over a Pod an Instance elsewhere rendered: a Pod a manager cluster dispatched
// here, which this cluster's Instance webhook never saw. A privileged container (init containers included)
// needs instance-privileged-allowed, a host path volume instance-host-path-volume-allowed; the first of each is
// named, at its path in the Pod's spec.
func PodGates(pod *corev1.PodSpec, privilegedAllowed, hostPathAllowed bool) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	privileged := func(path *field.Path, cs []corev1.Container) bool {
		for i, c := range cs {
			if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
				errs = append(errs, field.Forbidden(path.Index(i).Child("securityContext", "privileged"), privilegedForbidden))
				return true
			}
		}
		return false
	}
	if !privilegedAllowed && !privileged(spec.Child("initContainers"), pod.InitContainers) {
		privileged(spec.Child("containers"), pod.Containers)
	}
	if hostPathAllowed {
		return errs
	}
	for i, v := range pod.Volumes {
		if v.HostPath != nil {
			return append(errs, field.Forbidden(spec.Child("volumes").Index(i).Child("hostPath"), hostPathForbidden))
		}
	}
	return errs
}

// hadHostPath reports whether the Instance before an update already had this host path volume's host path.
func hadHostPath(old *workerv1.Instance, v workerv1.AdditionalVolume) bool {
	if old == nil {
		return false
	}
	for _, o := range old.Spec.AdditionalVolumes {
		if o.HostPath != nil && apiequality.Semantic.DeepEqual(o.HostPath, v.HostPath) {
			return true
		}
	}
	return false
}

// SecretRef is a Secret an Instance's Pod uses, and the field that names it.
type SecretRef struct {
	Path *field.Path
	Name string
}

// NewSecretRefs returns the Secrets an Instance's Pod would use (its image pull secret, its SSH keys, its
// secret volumes) that it did not use before the update (old is nil on create). Whoever writes the Instance
// must be allowed to read each of them: the Pod hands their contents to whoever runs in it.
func NewSecretRefs(inst, old *workerv1.Instance) []SecretRef {
	had := map[string]bool{}
	if old != nil {
		for _, r := range secretRefs(old) {
			had[r.Name] = true
		}
	}
	var out []SecretRef
	for _, r := range secretRefs(inst) {
		if !had[r.Name] {
			out = append(out, r)
		}
	}
	return out
}

func secretRefs(inst *workerv1.Instance) []SecretRef {
	spec := field.NewPath("spec")
	var out []SecretRef
	if inst.Spec.ImagePullSecret != "" {
		out = append(out, SecretRef{spec.Child("imagePullSecret"), inst.Spec.ImagePullSecret})
	}
	if inst.Spec.SSHPublicKey != "" {
		out = append(out, SecretRef{spec.Child("sshPublicKey"), inst.Spec.SSHPublicKey})
	}
	for i, v := range inst.Spec.AdditionalVolumes {
		if v.Secret != nil {
			out = append(out, SecretRef{spec.Child("additionalVolumes").Index(i).Child("secret", "name"), v.Secret.Name})
		}
	}
	return out
}
